//! MoE expert parallelism with device-initiated communication: every PE holds 64 tokens, each
//! token picks 4 of 8 experts per PE; dispatch sends the tokens to their experts' PEs, the
//! experts run (`y = x (e + 1) + e`), and combine brings the outputs home, weighted and
//! summed. Runs both modes, checks every value against a serial computation, and prints "ok".
//!
//! Run: `oshrun -n 2 target/release/moe` (any number of PEs; `OXSHMEM_DEVICE_CHANNEL=proxy` to
//! route through the proxy ring instead of direct stores).

use oxshmem_device::Device;
use oxshmem_moe::{Buffer, Mode, MoeConfig, reference};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let shmem = oxshmem::init()?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let dev = Device::init(&shmem)?;
    // The workload: deterministic tokens and top-k routing, the same on every run.
    let problem = reference::Problem {
        seed: 42,
        tokens: 64,
        hidden: 256,
        topk: 4,
        experts: 8 * n,
        npes: n,
        scenario: reference::Scenario::Random,
        ragged: false,
    };
    let x = problem.tokens_of(me);
    let (topk_idx, topk_weights) = problem.routing(me);
    let want = problem.expected_output(me);
    for mode in Mode::ALL {
        let cfg = MoeConfig {
            tokens: problem.tokens,
            hidden_bytes: 4 * problem.hidden,
            topk: problem.topk,
            experts: problem.experts,
            mode,
            ..Default::default()
        };
        let mut buf = Buffer::new(&shmem, &dev, cfg)?;
        let dispatched = buf.dispatch(&x, &topk_idx, &topk_weights)?;
        let experts = dispatched.local_experts();
        let per_expert = dispatched.tokens_per_expert();
        let from = dispatched.rows_from();
        let out = dispatched.apply_experts(|row, x, y| reference::expert(row.expert, x, y)).combine()?;
        let exact = out.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
        println!(
            "PE {me} {:<11}: experts {:?} got {per_expert:?} tokens; rows from each PE {from:?}; \
             combined {} tokens, digest {:016x}, {}",
            mode.name(),
            experts,
            out.len() / problem.hidden,
            reference::digest(out),
            if exact { "exact" } else { "WRONG" }
        );
        if !exact {
            return Err(format!("PE {me}: {} combine differs from the serial computation", mode.name()).into());
        }
        buf.free()?;
    }
    dev.finalize()?;
    shmem.barrier_all()?;
    if me == 0 {
        println!("ok");
    }
    shmem.finalize()?;
    Ok(())
}
