//! The IBGDA queue's reference bytes: the sequence of `bindings/cuda/tests/wqe_dump.cu` posted by
//! the Rust producer, against which `tests/cuda_device.rs` checks the nvcc build of the CUDA
//! producer and `tests/cpu_target.rs` its CPU-target build.

/// The queue after the sequence of `wqe_dump.cu`: one `wqe <i> <hex>` line per slot, then the
/// doorbell record and the doorbell, as `wqe_dump` prints them.
pub fn rust_wqe_dump() -> String {
    use oxshmem_device::ibgda::layout::{Amo, Mlx5, NicLayout, Remote, Sge, WorkRequest};
    use oxshmem_device::ibgda::qp::{CqMode, QpBox};
    const QPN: u32 = 0x123;
    let qp = QpBox::<Mlx5>::new(64, CqMode::Collapsed, 1, 1, QPN, 0);
    let post = |wrs: &[WorkRequest<'_>], signal: bool, fence: bool| {
        qp.post(wrs, signal, fence, &mut || false).expect("posting to an empty queue");
    };
    let heap = Remote { addr: 0x1000_0040, rkey: 0x11 };
    let local = Sge { addr: 0x7f00_0000_1000, len: 4096, lkey: 4097 };
    let payload: Vec<u8> = (1..=13).collect();
    post(&[WorkRequest::WriteInline { data: &payload, remote: heap }], true, false);
    post(&[WorkRequest::Write { local, remote: Remote { addr: 0x1000_2000, rkey: 0x11 } }], true, false);
    let get = WorkRequest::Read {
        local: Sge { addr: 0x7f00_0000_3000, len: 64, lkey: 4097 },
        remote: Remote { addr: 0x1000_4000, rkey: 0x22 },
    };
    post(&[get], true, false);
    let v = 0x0123_4567_89ab_cdefu64.to_le_bytes();
    post(&[WorkRequest::WriteInline { data: &v, remote: Remote { addr: 0x1000_0080, rkey: 0x11 } }], true, false);
    for width in [4u32, 8] {
        let value = 0xf0f0_f0f0_0000_000f_u64 | u64::from(width);
        let amos = [
            Amo::Fetch,
            Amo::Set(value),
            Amo::CompareSwap { cond: 0x5555, value },
            Amo::Add(value),
            Amo::And(value),
            Amo::Or(value),
            Amo::Xor(value),
        ];
        for a in amos {
            let wr = WorkRequest::Atomic {
                op: a.to_nic(),
                width,
                remote: Remote { addr: 0x1000_6000, rkey: 0x33 },
                result: Sge { addr: 0x7f00_0000_5000, len: width, lkey: 4098 },
            };
            post(&[wr], true, false);
        }
    }
    let signal = WorkRequest::Atomic {
        op: Amo::Add(1).to_nic(),
        width: 8,
        remote: Remote { addr: 0x1000_9000, rkey: 0x11 },
        result: Sge { addr: 0x7f00_0000_6000, len: 8, lkey: 4098 },
    };
    post(&[WorkRequest::Write { local, remote: Remote { addr: 0x1000_8000, rkey: 0x11 } }, signal], true, false);
    post(&[WorkRequest::Nop], false, true);
    post(&[WorkRequest::Dump { local: Sge { addr: 0x7f00_0000_7000, len: 1, lkey: 4097 } }], true, true);
    let mut out = String::new();
    for i in 0..qp.resv_head() {
        out.push_str(&format!("wqe {i} "));
        for b in qp.nic_slot(i) {
            out.push_str(&format!("{b:02x}"));
        }
        out.push('\n');
    }
    out.push_str(&format!("dbr {:08x}\n", Mlx5::dbr_value(qp.prod_idx())));
    out.push_str(&format!("db {:016x}\n", qp.nic_doorbell()));
    out
}
