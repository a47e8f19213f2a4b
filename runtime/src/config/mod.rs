//! Configuration, read once at init from the environment.
//!
//! Every variable is declared once in [`VARS`] (name, aliases, default, help, type), as Sandia
//! OpenSHMEM's `SHMEM_INTERNAL_ENV_DEF` does, so that `SHMEM_INFO`, `oxshmem-info` and
//! `docs/configuration.md` show the one table with each value's source.
//!
//! NVSHMEM's variables are read with their NVSHMEM meaning where oxshmem has one: an alias where
//! the meaning is the same (`NVSHMEM_SYMMETRIC_SIZE` of `SHMEM_SYMMETRIC_SIZE`), a variable of
//! [`Group::Nvshmem`] translated where it differs (`NVSHMEM_DEBUG`'s levels, `NVSHMEM_BOOTSTRAP`
//! in [`bootstrap_from_env`]; the device layer translates `NVSHMEM_DISABLE_P2P`,
//! `NVSHMEM_IB_ENABLE_IBGDA` and `NVSHMEM_REMOTE_TRANSPORT` into its channels). An explicit
//! `OXSHMEM_*` or `SHMEM_*` setting always wins over the NVSHMEM spelling. NVSHMEM's variables
//! that mean nothing here are listed in [`NVSHMEM_NO_EFFECT`]; at init PE 0 names every
//! `NVSHMEM_*`, `SHMEM_*` or `OXSHMEM_*` variable that nobody reads ([`env_warnings`]).
//!
//! One file per concern, this one the public face (everything is re-exported here, so paths
//! are `oxshmem::config::…`):
//!
//! - `table.rs`: the variable table ([`Var`], the runtime's [`VARS`]) and its lookups
//!   ([`lookup`], [`value_of`], [`markdown_table`]), and the seam through which a layer above
//!   the runtime adds its own variables to the one table ([`register`] a [`Layer`]): the device
//!   layer (`oxshmem_device::config`), which the runtime cannot depend on, so that its
//!   variables are known by name only here ([`DEVICE_NAMES`], for the warnings);
//! - `parse.rs`: the values' rules ([`parse_size`]) and the resolved [`Config`] of a PE, with
//!   the checks every init makes of every variable of the table;
//! - `nvshmem.rs`: NVSHMEM compatibility: `NVSHMEM_DEBUG`'s levels, the bootstrap choice
//!   ([`bootstrap_from_env`]), the variables without effect, NVSHMEM's `NVSHMEM_INFO` listing
//!   and `oxshmem-info`'s NVSHMEM view;
//! - `host.rs`: facts of the host (CPUs, page size) that decisions read;
//! - `diagnostics.rs`: what PE 0 prints at init: unknown names with the nearest known one
//!   ([`env_warnings`]) and the `SHMEM_INFO` text ([`info_text`]).

mod diagnostics;
mod host;
mod nvshmem;
mod parse;
mod table;

pub use diagnostics::{
    FAMILIES, READ_ELSEWHERE, edit_distance, env_warnings, info_text, is_known, nearest_known, print_env_warnings,
    print_info,
};
pub use host::{host_cpus, job_cpu_list, job_cpus, page_size};
pub use nvshmem::{
    NVSHMEM_API_VERSION, NVSHMEM_NO_EFFECT, NvBootstrap, NvDebug, NvshmemSetting, bootstrap_from_env, no_effect_reason,
    nvshmem_info_text, nvshmem_settings, nvshmem_style,
};
pub use parse::{
    Config, MIN_SYMMETRIC_SIZE, NodeGrouping, Refused, TransportChoice, parse_bool, parse_size, refused_text,
};
pub use table::{
    DEVICE_NAMES, Env, Group, Layer, Section, Source, VARS, Var, VarType, layers, lookup, lookup_in, markdown_table,
    register, shown_vars, value_of, var_named, vars,
};

#[cfg(test)]
mod test_env {
    /// An environment made of `pairs`.
    pub(crate) fn env_of<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }
}
