//! PE program for configuration from the environment, the NVSHMEM spellings above all:
//! `pe-config <case>`.
//!
//! - `init`: init, barrier, finalize; prints `PE i of N: ok`. The test sets the environment
//!   and reads what PE 0 printed at init (warnings, the `NVSHMEM_INFO` listing, the version).
//! - `init-fails`: expects init to fail; prints `ERR init: <error>` and exits with status 3.
//! - `config`: init, then prints `PE i: debug=<bool> version=<bool> info=<bool>
//!   nvshmem_debug=<LEVEL>`: the configuration the runtime resolved from this environment.
//! - `channels`: init and `Device::init`, then prints `PE i: channels <kind>,<kind>,...`, the
//!   device layer's channel to every PE (`P2p`, `Proxy`, `Ibgda`).

use oxshmem_device::Device;
use oxshmem_tests::pe::{OrDie, dispatch, finish, init};

fn main() {
    dispatch("pe-config", &[("init", init_ok), ("init-fails", init_fails), ("config", config), ("channels", channels)]);
}

fn init_ok(_: &[String]) {
    let shmem = init();
    shmem.barrier_all().or_die("shmem_barrier_all");
    println!("PE {} of {}: ok", shmem.my_pe(), shmem.n_pes());
    finish(shmem);
}

fn init_fails(_: &[String]) {
    match oxshmem::init() {
        Ok(_) => oxshmem_tests::pe::fail("shmem_init succeeded, but this case expects it to fail"),
        Err(e) => {
            eprintln!("{e}");
            println!("ERR init: {e}");
            std::process::exit(3);
        }
    }
}

fn config(_: &[String]) {
    let shmem = init();
    let me = shmem.my_pe();
    let c = oxshmem::config::Config::from_env(me).or_die("Config::from_env");
    println!(
        "PE {me}: debug={} version={} info={} nvshmem_debug={}",
        c.debug,
        c.print_version,
        c.info,
        c.nvshmem_debug.name()
    );
    finish(shmem);
}

fn channels(_: &[String]) {
    let shmem = init();
    let dev = Device::init(&shmem).map_err(oxshmem::Error::from).or_die("Device::init");
    let kinds: Vec<String> =
        (0..shmem.n_pes()).map(|pe| dev.channel_of(pe).map_or("none".to_string(), |k| format!("{k:?}"))).collect();
    println!("PE {}: channels {}", shmem.my_pe(), kinds.join(","));
    dev.finalize().map_err(oxshmem::Error::from).or_die("Device::finalize");
    finish(shmem);
}
