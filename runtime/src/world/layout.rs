//! Which PEs share a node: grouped by host, or by the launcher's placement split further by
//! host (`OXSHMEM_NODES`).

use oxshmem_bootstrap::Bootstrap;

use super::NodeLayout;
use super::card::PeCard;
use crate::config::{Config, NodeGrouping, TransportChoice};

/// This host's name, and the key that tells hosts apart (name and boot id: two containers
/// with one name on different machines are different hosts).
pub(super) fn host_key() -> (String, String) {
    let mut buf = [0u8; 256];
    // SAFETY: buf is writable for its whole length; gethostname NUL-terminates within it.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let host = if rc == 0 {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    } else {
        "localhost".to_string()
    };
    let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let key = format!("{host}/{}", boot_id.trim());
    (host, key)
}

/// The nodes of the job, numbered in order of their first PE: by host key, or by the
/// launcher's placement split further by host key.
pub(super) fn node_layout(me: usize, cards: &[PeCard], config: &Config, boot: &dyn Bootstrap) -> NodeLayout {
    let n = cards.len();
    let host_keys: Vec<&str> = cards.iter().map(|c| c.host_key.as_str()).collect();
    let by_host = group_by_host(&host_keys);
    let launcher = match config.nodes {
        NodeGrouping::Host => None,
        NodeGrouping::Launcher => boot.node_mapping(),
        // Shared memory only (OXSHMEM_TRANSPORT=shm), or no network transport in this build:
        // a split that only the launcher sees would make peers on this very host unreachable.
        NodeGrouping::Auto if cfg!(feature = "ofi") && config.transport != TransportChoice::Shm => boot.node_mapping(),
        NodeGrouping::Auto => None,
    };
    let launcher = launcher.filter(|m| m.len() == n);
    let node_of = match &launcher {
        Some(m) => group_by_host_and_launcher(&by_host, m),
        None => by_host.clone(),
    };
    let n_nodes = node_of.iter().max().map_or(0, |&k| k + 1);
    let hosts: Vec<String> = (0..n_nodes)
        .map(|k| {
            let first = node_of.iter().position(|&x| x == k).expect("every node has a PE");
            let host = &cards[first].host;
            match &launcher {
                // Several nodes on one host: say which of the launcher's nodes this is.
                Some(m) if node_of.iter().zip(&by_host).any(|(&x, &h)| x != k && h == by_host[first]) => {
                    format!("{host} (launcher node {})", m[first])
                }
                _ => host.clone(),
            }
        })
        .collect();
    let my_node = node_of[me];
    let local_pes: Vec<usize> = (0..n).filter(|&p| node_of[p] == my_node).collect();
    NodeLayout { node_of, hosts, local_pes }
}

/// How many PEs run on this PE's host (whatever the nodes are).
pub(super) fn pes_on_my_host(me: usize, cards: &[PeCard]) -> usize {
    cards.iter().filter(|c| c.host_key == cards[me].host_key).count()
}

/// Numbers the distinct keys in order of their first appearance: entry `p` of the result is
/// the number of key `p`.
fn number_by_first_appearance<K: PartialEq>(keys: impl IntoIterator<Item = K>) -> Vec<usize> {
    let mut seen: Vec<K> = Vec::new();
    keys.into_iter()
        .map(|k| match seen.iter().position(|s| *s == k) {
            Some(i) => i,
            None => {
                seen.push(k);
                seen.len() - 1
            }
        })
        .collect()
}

/// Node of every PE by host key, numbered in order of their first PE.
fn group_by_host(keys: &[&str]) -> Vec<usize> {
    number_by_first_appearance(keys)
}

/// The groups of PEs that share both their host (`by_host`) and their launcher node
/// (`launcher`), numbered in order of their first PE: the launcher's nodes, split where host
/// keys differ.
fn group_by_host_and_launcher(by_host: &[usize], launcher: &[usize]) -> Vec<usize> {
    number_by_first_appearance(by_host.iter().zip(launcher))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_group_in_order_of_first_pe() {
        assert_eq!(group_by_host(&["b", "a", "b", "c", "a"]), [0, 1, 0, 2, 1]);
        assert_eq!(group_by_host(&["x"]), [0]);
    }

    #[test]
    fn launcher_nodes_are_split_by_host() {
        let one_host = [0, 0, 0, 0];
        // Hydra's round-robin over two "hosts" on one machine: two nodes.
        assert_eq!(group_by_host_and_launcher(&one_host, &[0, 1, 0, 1]), [0, 1, 0, 1]);
        assert_eq!(group_by_host_and_launcher(&one_host, &[0, 0, 1, 1]), [0, 0, 1, 1]);
        // A launcher that puts two real hosts into one node cannot make them share memory.
        assert_eq!(group_by_host_and_launcher(&[0, 1, 0, 1], &[0, 0, 0, 0]), [0, 1, 0, 1]);
        assert_eq!(group_by_host_and_launcher(&[0, 0, 1, 1], &[0, 1, 1, 1]), [0, 1, 2, 2]);
    }
}
