//! The peer table: which transport reaches which PE. Node peers are reached through their
//! mapped segments (the shared-memory transport, `transport/shm.rs`), every other PE through
//! the network transport, when the build has one.

use oxshmem_bootstrap::Bootstrap;

use super::NodeLayout;
use super::card::PeCard;
use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::heap::segment::Mapping;
use crate::transport::Transport;
use crate::transport::shm::{PeerSegment, ShmTransport};

const F: &str = "shmem_init";

/// This PE's own symmetric segments, as init made them: `(base, len)` of the heap's whole file
/// (the runtime's objects included) and of the static data, if any.
#[derive(Debug, Clone, Copy)]
pub(super) struct OwnSegments {
    pub(super) heap: (usize, usize),
    pub(super) static_data: Option<(usize, usize)>,
}

/// The shared-memory transport's table: this PE's own segments, and every node peer's, mapped
/// on first use (see `transport/shm.rs`) — the next PE of the node now, so that a host where
/// mapping fails says so at init. With `map_peers` false (`OXSHMEM_TRANSPORT=ofi`) it maps no
/// peer: every peer but this PE itself is then reached through the network transport.
pub(super) fn shm_table(
    me: usize,
    layout: &NodeLayout,
    cards: &[PeCard],
    own: OwnSegments,
    heap_map: Mapping,
    map_peers: bool,
) -> Result<ShmTransport> {
    let mut shm = ShmTransport::new(me, cards.len());
    let mapped = || layout.local_pes.iter().copied().filter(|&p| map_peers || p == me);
    for pe in mapped() {
        if pe == me {
            shm.set(pe, 0, own.heap.0, own.heap.1);
        } else {
            let c = &cards[pe];
            let what = format!("heap of PE {pe}");
            shm.set_lazy(pe, 0, c.heap_len, PeerSegment { pid: c.pid, fd: c.heap_fd, what });
        }
    }
    shm.keep(heap_map);
    if map_peers && layout.local_pes.len() > 1 {
        let at = layout.local_pes.iter().position(|&p| p == me).expect("this PE is on its node");
        let next = layout.local_pes[(at + 1) % layout.local_pes.len()];
        shm.map_now(next, 0).map_err(|e| Error::new(me, F, e.into()))?;
    }
    if let Some((sbase, slen)) = own.static_data {
        super::card::check_static_sizes(me, cards, slen)?;
        for pe in mapped() {
            if pe == me {
                shm.set(pe, 1, sbase, slen);
            } else {
                let c = &cards[pe];
                let what = format!("static data of PE {pe}");
                shm.set_lazy(pe, 1, c.static_len, PeerSegment { pid: c.pid, fd: c.static_fd, what });
            }
        }
    }
    Ok(shm)
}

/// The network transport, for the peers only it reaches; `None` when every peer is on this
/// node and mapped. Whether one is needed at all is the same decision on every PE (it depends
/// on the layout and the environment), as its setup is collective.
pub(super) fn network(
    boot: &dyn Bootstrap,
    me: usize,
    layout: &NodeLayout,
    own: OwnSegments,
    map_peers: bool,
    config: &Config,
) -> Result<Option<Box<dyn Transport>>> {
    let n = layout.node_of.len();
    let my_node = layout.node_of[me];
    if layout.n_nodes() <= 1 && map_peers {
        return Ok(None);
    }
    let need: Vec<bool> = (0..n).map(|p| p != me && (layout.node_of[p] != my_node || !map_peers)).collect();
    let segs: Vec<(usize, usize)> = std::iter::once(own.heap).chain(own.static_data).collect();
    match crate::transport::network(boot, me, n, &segs, &need, config)? {
        Some(t) => Ok(Some(t)),
        None => {
            let pe = need.iter().position(|&x| x).unwrap_or(me);
            let host = layout.hosts[layout.node_of[pe]].clone();
            Err(Error::new(me, F, ErrorKind::Unreachable { pe, host }))
        }
    }
}

/// Comma-separated PE numbers, `-` for none.
fn pe_list(pes: impl Iterator<Item = usize>) -> String {
    let v: Vec<String> = pes.map(|p| p.to_string()).collect();
    if v.is_empty() { "-".into() } else { v.join(",") }
}

/// `OXSHMEM_SHOW_PEERS`: this PE's node and which transport reaches each PE, one line:
/// `oxshmem: PE 1: node 1 of 2 (host): shm 1,3; ofi 0,2 (tcp;ofi_rxm ...); unreachable -`.
pub(super) fn peer_table_line(
    me: usize,
    layout: &NodeLayout,
    shm: &ShmTransport,
    net: Option<&dyn Transport>,
) -> String {
    let (node_of, hosts) = (&layout.node_of, &layout.hosts);
    let n = node_of.len();
    let mapped = |p: usize| shm.base(p, 0) != 0;
    let by_net = |p: usize| !mapped(p) && net.is_some_and(|t| t.reaches(p));
    let (net_name, detail) = net.map_or(("net", String::new()), |t| (t.name(), t.detail()));
    format!(
        "oxshmem: PE {me}: node {} of {} ({}): shm {}; {net_name} {}{}; unreachable {}",
        node_of[me],
        hosts.len(),
        hosts[node_of[me]],
        pe_list((0..n).filter(|&p| mapped(p))),
        pe_list((0..n).filter(|&p| by_net(p))),
        if detail.is_empty() { String::new() } else { format!(" ({detail})") },
        pe_list((0..n).filter(|&p| !mapped(p) && !by_net(p))),
    )
}
