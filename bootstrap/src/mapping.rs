//! Which ranks share a node, as the launcher placed them.
//!
//! MPICH's Hydra and Slurm publish the placement as the job attribute `PMI_process_mapping`
//! (PMI-2 `info-getjobattr`, PMI-1 `get key=PMI_process_mapping`) in the form
//! `(vector,(start,nodes,ppn),(start,nodes,ppn),...)`: each block puts `ppn` consecutive
//! ranks on each of the `nodes` nodes numbered from `start`, and when the blocks are used up
//! the whole pattern starts again with the next rank (MPICH `src/util/mpir_nodemap.c`,
//! `populate_ids_from_mapping`). So `(vector,(0,1,1))` is "every rank on node 0" whatever the
//! job size, and `(vector,(0,2,1))` is round-robin over two nodes.
//!
//! The parser here takes untrusted launcher text: it never panics, never allocates more than
//! the job size, and rejects anything it does not fully understand.

/// Why a `PMI_process_mapping` value was not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MappingError {
    /// The text is not `(vector,(a,b,c),...)`.
    #[error("not a (vector,(start,nodes,ppn),...) mapping: {0}")]
    Syntax(String),
    /// The blocks place no rank at all (every `nodes` or `ppn` is 0).
    #[error("the mapping places no rank")]
    Empty,
    /// The job size is 0.
    #[error("job size 0")]
    NoRanks,
}

/// Longest mapping text accepted; real ones are a few dozen bytes per block.
const MAX_MAPPING_LEN: usize = 64 * 1024;

/// Parse `PMI_process_mapping` for a job of `size` ranks into the launcher's node id of every
/// rank (`result[rank]`, the ids as the launcher numbers them).
///
/// ```
/// use oxshmem_bootstrap::mapping::parse_process_mapping;
/// assert_eq!(parse_process_mapping("(vector,(0,1,1))", 3).unwrap(), [0, 0, 0]);
/// assert_eq!(parse_process_mapping("(vector,(0,2,1))", 4).unwrap(), [0, 1, 0, 1]);
/// assert_eq!(parse_process_mapping("(vector,(0,2,2))", 4).unwrap(), [0, 0, 1, 1]);
/// assert!(parse_process_mapping("(vector,(0,0,1))", 4).is_err());
/// ```
pub fn parse_process_mapping(text: &str, size: usize) -> Result<Vec<usize>, MappingError> {
    if size == 0 {
        return Err(MappingError::NoRanks);
    }
    if text.len() > MAX_MAPPING_LEN {
        return Err(MappingError::Syntax(format!("{} bytes is longer than {MAX_MAPPING_LEN}", text.len())));
    }
    let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let body = compact
        .strip_prefix("(vector,")
        .and_then(|b| b.strip_suffix(')'))
        .ok_or_else(|| MappingError::Syntax("missing \"(vector,\" ... \")\"".into()))?;
    let mut blocks = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let inner = rest.strip_prefix('(').ok_or_else(|| MappingError::Syntax(format!("expected '(' at {rest:?}")))?;
        let close = inner.find(')').ok_or_else(|| MappingError::Syntax("unclosed block".into()))?;
        let nums: Vec<&str> = inner[..close].split(',').collect();
        let [start, nodes, ppn] = nums[..] else {
            return Err(MappingError::Syntax(format!("block ({}) does not have three numbers", &inner[..close])));
        };
        let num = |s: &str| s.parse::<usize>().map_err(|_| MappingError::Syntax(format!("{s:?} is not a number")));
        blocks.push((num(start)?, num(nodes)?, num(ppn)?));
        rest = &inner[close + 1..];
        if let Some(r) = rest.strip_prefix(',') {
            if r.is_empty() {
                return Err(MappingError::Syntax("trailing ','".into()));
            }
            rest = r;
        } else if !rest.is_empty() {
            return Err(MappingError::Syntax(format!("expected ',' at {rest:?}")));
        }
    }
    if blocks.is_empty() {
        return Err(MappingError::Syntax("no blocks".into()));
    }
    // One pass of the pattern, cut at `size` ranks (the pattern may describe more ranks than
    // the job has, and its numbers may be huge: never expand past `size`).
    let mut pattern = Vec::new();
    'fill: for &(start, nodes, ppn) in &blocks {
        for j in 0..nodes {
            let node = start.checked_add(j).ok_or_else(|| MappingError::Syntax("node id overflows".into()))?;
            for _ in 0..ppn {
                if pattern.len() == size {
                    break 'fill;
                }
                pattern.push(node);
            }
            if ppn == 0 || pattern.len() == size {
                // With ppn 0 the loop over `nodes` could run for ever without placing a rank.
                break;
            }
        }
    }
    if pattern.is_empty() {
        return Err(MappingError::Empty);
    }
    Ok((0..size).map(|r| pattern[r % pattern.len()]).collect())
}

/// Renumber node ids in order of their first rank: the result's node 0 holds rank 0, node 1
/// holds the lowest rank not on node 0, and so on — the numbering the runtime uses.
///
/// ```
/// use oxshmem_bootstrap::mapping::renumber;
/// assert_eq!(renumber(&[7, 3, 7, 3, 9]), [0, 1, 0, 1, 2]);
/// ```
pub fn renumber(ids: &[usize]) -> Vec<usize> {
    let mut seen: Vec<usize> = Vec::new();
    ids.iter()
        .map(|id| match seen.iter().position(|s| s == id) {
            Some(i) => i,
            None => {
                seen.push(*id);
                seen.len() - 1
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hydra_and_slurm_forms() {
        // What Hydra 4.0 and Slurm 22.05 answered on this machine.
        assert_eq!(parse_process_mapping("(vector,(0,1,1))", 4).unwrap(), [0; 4]);
        assert_eq!(parse_process_mapping("(vector,(0,1,3))", 3).unwrap(), [0; 3]);
        assert_eq!(parse_process_mapping("(vector,(0,2,1))", 5).unwrap(), [0, 1, 0, 1, 0]);
        assert_eq!(parse_process_mapping(" (vector, (0,2,2), (2,1,3)) ", 8).unwrap(), [0, 0, 1, 1, 2, 2, 2, 0]);
        // A pattern longer than the job is cut.
        assert_eq!(parse_process_mapping("(vector,(0,4,4))", 2).unwrap(), [0, 0]);
    }

    #[test]
    fn bad_mappings() {
        for bad in [
            "",
            "vector,(0,1,1)",
            "(vector)",
            "(vector,)",
            "(vector,(0,1))",
            "(vector,(0,1,1,1))",
            "(vector,(0,1,1),)",
            "(vector,(0,1,1)(1,1,1))",
            "(vector,(0,1,x))",
            "(vector,(0,1,-1))",
            "(vector,(0,1,1)",
            "(vector,(0,1,1)))",
            "(hostlist,(0,1,1))",
        ] {
            assert!(parse_process_mapping(bad, 4).is_err(), "{bad:?}");
        }
        assert_eq!(parse_process_mapping("(vector,(0,0,5),(1,3,0))", 4), Err(MappingError::Empty));
        assert_eq!(parse_process_mapping("(vector,(0,1,1))", 0), Err(MappingError::NoRanks));
        // Huge numbers neither overflow nor allocate.
        let huge = format!("(vector,({},{},{}))", usize::MAX, usize::MAX, usize::MAX);
        assert_eq!(parse_process_mapping(&huge, 3).unwrap(), [usize::MAX; 3]);
        let over = format!("(vector,({},3,1))", usize::MAX);
        assert!(parse_process_mapping(&over, 3).is_err());
    }

    #[test]
    fn renumbering() {
        assert_eq!(renumber(&[]), Vec::<usize>::new());
        assert_eq!(renumber(&[5, 5, 5]), [0, 0, 0]);
        assert_eq!(renumber(&[1, 0, 1, 0]), [0, 1, 0, 1]);
    }
}
