//! The queue's 64-bit counters past 2^32: a normal-mode CQ whose consumer index has passed
//! 2^32 completions still has room, takes the next completion and moves `cons_idx`. (The
//! consumer index was once 32 bits wide while the NIC counted completions in 64: past 2^32
//! completions the NIC saw the CQ full forever.) For both layouts: their owner bits (mlx5's
//! as is, hns's inverted) must agree with the lap the counters are on.

use oxshmem_device::ibgda::layout::{Completion, Hns, Mlx5, NicLayout, WorkRequest};
use oxshmem_device::ibgda::qp::{CqMode, QpBox};

fn past_two_to_the_32<L: NicLayout>() {
    for skipped in [(1u64 << 32) - 3, 1 << 32, (1 << 32) + 5, 3 << 33] {
        let ncqes = 8u64;
        let q: QpBox<L> = QpBox::new(16, CqMode::Normal, ncqes as usize, 4, 0x77, 1);
        q.nic_test_consumed_cqes(skipped);
        for k in 0..3 * ncqes {
            let pcqe = skipped + k;
            assert_eq!(q.nic_cq_room(pcqe), ncqes, "{}: after {skipped} + {k} completions", L::NAME);
            let end = q.post(&[WorkRequest::Nop], true, false, &mut || false).expect("post");
            // The NIC's view: it completes the WQE at slot end - 1 as its pcqe-th completion.
            assert!(
                q.nic_complete(Completion::Ok { wqe_counter: (end - 1) as u16, owner: 0 }, pcqe, &mut || false),
                "{}: the NIC found the CQ full after {skipped} + {k} completions",
                L::NAME
            );
            assert_eq!(q.poll().expect("poll"), end, "{}: cons_idx after {skipped} + {k} completions", L::NAME);
        }
    }
}

#[test]
fn normal_cq_past_two_to_the_32_completions() {
    past_two_to_the_32::<Mlx5>();
}

#[test]
fn hns_normal_cq_past_two_to_the_32_completions() {
    past_two_to_the_32::<Hns>();
}
