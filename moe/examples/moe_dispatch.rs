//! The `oxshmem_moe` crate's example as a program: one MoE dispatch and combine of
//! 128 tokens over 8 experts per PE, then the buffer, the device and the runtime are freed and
//! finalized in that order.
//!
//! `cargo build -p oxshmem-moe --examples && target/debug/oshrun -n 2 target/debug/examples/moe_dispatch`

use oxshmem_device::Device;
use oxshmem_moe::{Buffer, Mode, MoeConfig, reference};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let shmem = oxshmem::init()?;
    let dev = Device::init(&shmem)?;
    let experts = 8 * shmem.n_pes();
    let cfg =
        MoeConfig { tokens: 128, hidden_bytes: 7168, topk: 8, experts, mode: Mode::Throughput, ..Default::default() };
    let mut buf = Buffer::new(&shmem, &dev, cfg)?;
    let x = vec![1.0f32; 128 * 7168 / 4]; // 128 tokens of 1792 f32
    let idx: Vec<i32> = (0..128 * 8).map(|i| ((i / 8 + i % 8 * 5) % experts) as i32).collect();
    let w = vec![0.125f32; 128 * 8]; // top-8 experts and weights per token
    let d = buf.dispatch(&x, &idx, &w)?;
    println!("PE {}: my experts received {:?} tokens", shmem.my_pe(), d.tokens_per_expert());
    let out: &[f32] = d.apply_experts(|row, x, y| reference::expert(row.expert, x, y)).combine()?;
    println!("PE {}: combined {} values", shmem.my_pe(), out.len());
    buf.free()?; // collective, like the rest
    dev.finalize()?;
    shmem.finalize()?;
    Ok(())
}
