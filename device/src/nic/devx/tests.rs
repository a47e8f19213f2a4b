//! Field-by-field tests of the DEVX builders and parsers.
//!
//! The expected offsets are not the module's constants: they are derived here from
//! transcriptions of the C structures — every `u8 name[BITS]` member in PRM order, reserved
//! ones included — so a wrong constant, a field written to the wrong place or a value that
//! leaks into a neighbour fails. The transcription checks itself too: every
//! `reserved_at_<hex>` member must sit at the offset its name states, and every structure must
//! sum to its PRM size.
//!
//! Sources (read through the stored copies of public repositories):
//! - rdma-core `providers/mlx5/mlx5_ifc.h` (commit a4ab8e8b): `mlx5_ifc_cmd_hca_cap_bits`,
//!   `mlx5_ifc_query_hca_cap_{in,out}_bits`, `mlx5_ifc_ads_bits`, `mlx5_ifc_qpc_bits`,
//!   `mlx5_ifc_create_qp_out_bits`, `mlx5_ifc_{rst2init,init2rtr,rtr2rts}_qp_{in,out}_bits`;
//! - NVSHMEM `src/modules/transport/common/mlx5_ifc.h`: `mlx5_ifc_create_qp_in_bits` (as
//!   rdma-core's, with `wq_umem_offset` named where rdma-core has `reserved_at_800[0x40]`);
//! - DPDK `drivers/common/mlx5/mlx5_prm.h`: `mlx5_ifc_cqc_bits`,
//!   `mlx5_ifc_create_cq_{in,out}_bits` (rdma-core's header has no CQ structures).

use super::*;

/// One member of a transcribed PRM structure.
#[derive(Clone, Copy)]
enum Item {
    /// `u8 name[width]`.
    F(&'static str, usize),
    /// An embedded structure (for a union: the one member this code uses).
    S(&'static str, &'static [Item]),
}
use Item::{F, S};

/// rdma-core `providers/mlx5/mlx5_ifc.h`, `struct mlx5_ifc_cmd_hca_cap_bits`, member by member
/// up to and including the dword of `umem_uid_0` / `log_pg_sz` (bit 0x260); the rest of the
/// 0x800-bit structure is one `rest` member.
const CMD_HCA_CAP: &[Item] = &[
    F("access_other_hca_roce", 0x1),
    F("reserved_at_1", 0x1e),
    F("vhca_resource_manager", 0x1),
    F("hca_cap_2", 0x1),
    F("reserved_at_21", 0xf),
    F("vhca_id", 0x10),
    F("reserved_at_40", 0x20),
    F("reserved_at_60", 0x2),
    F("qp_data_in_order", 0x1),
    F("reserved_at_63", 0x8),
    F("log_dma_mmo_max_size", 0x5),
    F("reserved_at_70", 0x10),
    F("log_max_srq_sz", 0x8),
    F("log_max_qp_sz", 0x8),
    F("reserved_at_90", 0x3),
    F("isolate_vl_tc_new", 0x1),
    F("reserved_at_94", 0x4),
    F("prio_tag_required", 0x1),
    F("reserved_at_99", 0x2),
    F("log_max_qp", 0x5),
    F("reserved_at_a0", 0xb),
    F("log_max_srq", 0x5),
    F("reserved_at_b0", 0x10),
    F("reserved_at_c0", 0x8),
    F("log_max_cq_sz", 0x8),
    F("reserved_at_d0", 0xb),
    F("log_max_cq", 0x5),
    F("log_max_eq_sz", 0x8),
    F("relaxed_ordering_write", 0x1),
    F("reserved_at_e9", 0x1),
    F("log_max_mkey", 0x6),
    F("tunneled_atomic", 0x1),
    F("as_notify", 0x1),
    F("m_pci_port", 0x1),
    F("m_vhca_mk", 0x1),
    F("cmd_on_behalf", 0x1),
    F("device_emulation_manager", 0x1),
    F("terminate_scatter_list_mkey", 0x1),
    F("repeated_mkey", 0x1),
    F("dump_fill_mkey", 0x1),
    F("reserved_at_f9", 0x3),
    F("log_max_eq", 0x4),
    F("max_indirection", 0x8),
    F("fixed_buffer_size", 0x1),
    F("log_max_mrw_sz", 0x7),
    F("force_teardown", 0x1),
    F("fast_teardown", 0x1),
    F("log_max_bsf_list_size", 0x6),
    F("umr_extended_translation_offset", 0x1),
    F("null_mkey", 0x1),
    F("log_max_klm_list_size", 0x6),
    F("reserved_at_120", 0x2),
    F("qpc_extension", 0x1),
    F("reserved_at_123", 0x7),
    F("log_max_ra_req_dc", 0x6),
    F("reserved_at_130", 0xa),
    F("log_max_ra_res_dc", 0x6),
    F("reserved_at_140", 0x7),
    F("sig_crc64_xp10", 0x1),
    F("sig_crc32c", 0x1),
    F("reserved_at_149", 0x1),
    F("log_max_ra_req_qp", 0x6),
    F("reserved_at_150", 0x1),
    F("rts2rts_qp_udp_sport", 0x1),
    F("rts2rts_lag_tx_port_affinity", 0x1),
    F("dma_mmo_sq", 0x1),
    F("reserved_at_154", 0x6),
    F("log_max_ra_res_qp", 0x6),
    F("end_pad", 0x1),
    F("cc_query_allowed", 0x1),
    F("cc_modify_allowed", 0x1),
    F("start_pad", 0x1),
    F("cache_line_128byte", 0x1),
    F("gid_table_size_ro", 0x1),
    F("pkey_table_size_ro", 0x1),
    F("reserved_at_167", 0x1),
    F("rnr_nak_q_counters", 0x1),
    F("rts2rts_qp_counters_set_id", 0x1),
    F("rts2rts_qp_dscp", 0x1),
    F("reserved_at_16b", 0x4),
    F("qcam_reg", 0x1),
    F("gid_table_size", 0x10),
    F("out_of_seq_cnt", 0x1),
    F("vport_counters", 0x1),
    F("retransmission_q_counters", 0x1),
    F("debug", 0x1),
    F("modify_rq_counters_set_id", 0x1),
    F("rq_delay_drop", 0x1),
    F("max_qp_cnt", 0xa),
    F("pkey_table_size", 0x10),
    F("vport_group_manager", 0x1),
    F("vhca_group_manager", 0x1),
    F("ib_virt", 0x1),
    F("eth_virt", 0x1),
    F("vnic_env_queue_counters", 0x1),
    F("ets", 0x1),
    F("nic_flow_table", 0x1),
    F("eswitch_manager", 0x1),
    F("device_memory", 0x1),
    F("mcam_reg", 0x1),
    F("pcam_reg", 0x1),
    F("local_ca_ack_delay", 0x5),
    F("port_module_event", 0x1),
    F("enhanced_retransmission_q_counters", 0x1),
    F("port_checks", 0x1),
    F("pulse_gen_control", 0x1),
    F("disable_link_up_by_init_hca", 0x1),
    F("beacon_led", 0x1),
    F("port_type", 0x2),
    F("num_ports", 0x8),
    F("reserved_at_1c0", 0x1),
    F("pps", 0x1),
    F("pps_modify", 0x1),
    F("log_max_msg", 0x5),
    F("multi_path_xrc_rdma", 0x1),
    F("multi_path_dc_rdma", 0x1),
    F("multi_path_rc_rdma", 0x1),
    F("traffic_fast_control", 0x1),
    F("max_tc", 0x4),
    F("temp_warn_event", 0x1),
    F("dcbx", 0x1),
    F("general_notification_event", 0x1),
    F("multi_prio_sq", 0x1),
    F("afu_owner", 0x1),
    F("fpga", 0x1),
    F("rol_s", 0x1),
    F("rol_g", 0x1),
    F("ib_port_sniffer", 0x1),
    F("wol_s", 0x1),
    F("wol_g", 0x1),
    F("wol_a", 0x1),
    F("wol_b", 0x1),
    F("wol_m", 0x1),
    F("wol_u", 0x1),
    F("wol_p", 0x1),
    F("stat_rate_support", 0x10),
    F("sig_block_4048", 0x1),
    F("reserved_at_1f1", 0xb),
    F("cqe_version", 0x4),
    F("compact_address_vector", 0x1),
    F("eth_striding_wq", 0x1),
    F("reserved_at_202", 0x1),
    F("ipoib_enhanced_offloads", 0x1),
    F("ipoib_basic_offloads", 0x1),
    F("ib_striding_wq", 0x1),
    F("repeated_block_disabled", 0x1),
    F("umr_modify_entity_size_disabled", 0x1),
    F("umr_modify_atomic_disabled", 0x1),
    F("umr_indirect_mkey_disabled", 0x1),
    F("umr_fence", 0x2),
    F("dc_req_sctr_data_cqe", 0x1),
    F("dc_connect_qp", 0x1),
    F("dc_cnak_trace", 0x1),
    F("drain_sigerr", 0x1),
    F("cmdif_checksum", 0x2),
    F("sigerr_cqe", 0x1),
    F("reserved_at_213", 0x1),
    F("wq_signature", 0x1),
    F("sctr_data_cqe", 0x1),
    F("reserved_at_216", 0x1),
    F("sho", 0x1),
    F("tph", 0x1),
    F("rf", 0x1),
    F("dct", 0x1),
    F("qos", 0x1),
    F("eth_net_offloads", 0x1),
    F("roce", 0x1),
    F("atomic", 0x1),
    F("extended_retry_count", 0x1),
    F("cq_oi", 0x1),
    F("cq_resize", 0x1),
    F("cq_moderation", 0x1),
    F("cq_period_mode_modify", 0x1),
    F("cq_invalidate", 0x1),
    F("reserved_at_225", 0x1),
    F("cq_eq_remap", 0x1),
    F("pg", 0x1),
    F("block_lb_mc", 0x1),
    F("exponential_backoff", 0x1),
    F("scqe_break_moderation", 0x1),
    F("cq_period_start_from_cqe", 0x1),
    F("cd", 0x1),
    F("atm", 0x1),
    F("apm", 0x1),
    F("vector_calc", 0x1),
    F("umr_ptr_rlkey", 0x1),
    F("imaicl", 0x1),
    F("qp_packet_based", 0x1),
    F("reserved_at_233", 0x1),
    F("ipoib_enhanced_pkey_change", 0x1),
    F("initiator_src_dct_in_cqe", 0x1),
    F("qkv", 0x1),
    F("pkv", 0x1),
    F("set_deth_sqpn", 0x1),
    F("rts2rts_primary_sl", 0x1),
    F("initiator_src_dct", 0x1),
    F("dc_v2", 0x1),
    F("xrc", 0x1),
    F("ud", 0x1),
    F("uc", 0x1),
    F("rc", 0x1),
    F("uar_4k", 0x1),
    F("reserved_at_241", 0x9),
    F("uar_sz", 0x6),
    F("reserved_at_250", 0x2),
    F("umem_uid_0", 0x1),
    F("log_max_dc_cnak_qps", 0x5),
    F("log_pg_sz", 0x8),
    F("rest", 0x800 - 0x260),
];

/// rdma-core `providers/mlx5/mlx5_ifc.h`, `struct mlx5_ifc_query_hca_cap_in_bits`.
const QUERY_HCA_CAP_IN: &[Item] = &[
    F("opcode", 0x10),
    F("reserved_at_10", 0x10),
    F("reserved_at_20", 0x10),
    F("op_mod", 0x10),
    F("other_function", 0x1),
    F("reserved_at_41", 0xf),
    F("function_id", 0x10),
    F("reserved_at_60", 0x20),
];

/// rdma-core `union mlx5_ifc_hca_cap_union_bits`: 0x8000 bits, of which `cmd_hca_cap` is the
/// member used here.
const HCA_CAP_UNION: &[Item] = &[S("cmd_hca_cap", CMD_HCA_CAP), F("union_rest", 0x8000 - 0x800)];

/// rdma-core `providers/mlx5/mlx5_ifc.h`, `struct mlx5_ifc_query_hca_cap_out_bits`.
const QUERY_HCA_CAP_OUT: &[Item] = &[
    F("status", 0x8),
    F("reserved_at_8", 0x18),
    F("syndrome", 0x20),
    F("reserved_at_40", 0x40),
    S("capability", HCA_CAP_UNION),
];

/// DPDK `drivers/common/mlx5/mlx5_prm.h`, `struct mlx5_ifc_cqc_bits`.
const CQC: &[Item] = &[
    F("status", 0x4),
    F("as_notify", 0x1),
    F("initiator_src_dct", 0x1),
    F("dbr_umem_valid", 0x1),
    F("ext_element", 0x1),
    F("cqe_sz", 0x3),
    F("cc", 0x1),
    F("reserved_at_c", 0x1),
    F("scqe_break_moderation_en", 0x1),
    F("oi", 0x1),
    F("cq_period_mode", 0x2),
    F("cqe_comp_en", 0x1),
    F("mini_cqe_res_format", 0x2),
    F("st", 0x4),
    F("always_armed_cq", 0x1),
    F("ext_element_type", 0x3),
    F("reserved_at_1c", 0x2),
    F("cqe_comp_layout", 0x2),
    F("dbr_umem_id", 0x20),
    F("reserved_at_40", 0x14),
    F("page_offset", 0x6),
    F("reserved_at_5a", 0x2),
    F("mini_cqe_res_format_ext", 0x2),
    F("cq_timestamp_format", 0x2),
    F("reserved_at_60", 0x3),
    F("log_cq_size", 0x5),
    F("uar_page", 0x18),
    F("reserved_at_80", 0x4),
    F("cq_period", 0xc),
    F("cq_max_count", 0x10),
    F("reserved_at_a0", 0x18),
    F("c_eqn", 0x8),
    F("reserved_at_c0", 0x3),
    F("log_page_size", 0x5),
    F("reserved_at_c8", 0x18),
    F("reserved_at_e0", 0x20),
    F("reserved_at_100", 0x8),
    F("last_notified_index", 0x18),
    F("reserved_at_120", 0x8),
    F("last_solicit_index", 0x18),
    F("reserved_at_140", 0x8),
    F("consumer_counter", 0x18),
    F("reserved_at_160", 0x8),
    F("producer_counter", 0x18),
    F("local_partition_id", 0xc),
    F("process_id", 0x14),
    F("reserved_at_1A0", 0x20),
    F("dbr_addr", 0x40),
];

/// DPDK `drivers/common/mlx5/mlx5_prm.h`, `struct mlx5_ifc_create_cq_in_bits` (without the
/// flexible `pas[]`).
const CREATE_CQ_IN: &[Item] = &[
    F("opcode", 0x10),
    F("uid", 0x10),
    F("reserved_at_20", 0x10),
    F("op_mod", 0x10),
    F("reserved_at_40", 0x40),
    S("cq_context", CQC),
    F("cq_umem_offset", 0x40),
    F("cq_umem_id", 0x20),
    F("cq_umem_valid", 0x1),
    F("reserved_at_2e1", 0x1f),
    F("reserved_at_300", 0x580),
];

/// DPDK `drivers/common/mlx5/mlx5_prm.h`, `struct mlx5_ifc_create_cq_out_bits`.
const CREATE_CQ_OUT: &[Item] = &[
    F("status", 0x8),
    F("reserved_at_8", 0x18),
    F("syndrome", 0x20),
    F("reserved_at_40", 0x8),
    F("cqn", 0x18),
    F("reserved_at_60", 0x20),
];

/// rdma-core `providers/mlx5/mlx5_ifc.h`, `struct mlx5_ifc_ads_bits`.
const ADS: &[Item] = &[
    F("fl", 0x1),
    F("free_ar", 0x1),
    F("reserved_at_2", 0xe),
    F("pkey_index", 0x10),
    F("reserved_at_20", 0x8),
    F("grh", 0x1),
    F("mlid", 0x7),
    F("rlid", 0x10),
    F("ack_timeout", 0x5),
    F("reserved_at_45", 0x3),
    F("src_addr_index", 0x8),
    F("reserved_at_50", 0x4),
    F("stat_rate", 0x4),
    F("hop_limit", 0x8),
    F("reserved_at_60", 0x4),
    F("tclass", 0x8),
    F("flow_label", 0x14),
    F("rgid_rip", 16 * 0x8),
    F("reserved_at_100", 0x4),
    F("f_dscp", 0x1),
    F("f_ecn", 0x1),
    F("reserved_at_106", 0x1),
    F("f_eth_prio", 0x1),
    F("ecn", 0x2),
    F("dscp", 0x6),
    F("udp_sport", 0x10),
    F("dei_cfi", 0x1),
    F("eth_prio", 0x3),
    F("sl", 0x4),
    F("vhca_port_num", 0x8),
    F("rmac_47_32", 0x10),
    F("rmac_31_0", 0x20),
];

/// rdma-core `providers/mlx5/mlx5_ifc.h`, `struct mlx5_ifc_qpc_bits`.
const QPC: &[Item] = &[
    F("state", 0x4),
    F("lag_tx_port_affinity", 0x4),
    F("st", 0x8),
    F("reserved_at_10", 0x2),
    F("isolate_vl_tc", 0x1),
    F("pm_state", 0x2),
    F("reserved_at_15", 0x1),
    F("req_e2e_credit_mode", 0x2),
    F("offload_type", 0x4),
    F("end_padding_mode", 0x2),
    F("reserved_at_1e", 0x2),
    F("wq_signature", 0x1),
    F("block_lb_mc", 0x1),
    F("atomic_like_write_en", 0x1),
    F("latency_sensitive", 0x1),
    F("reserved_at_24", 0x1),
    F("drain_sigerr", 0x1),
    F("reserved_at_26", 0x2),
    F("pd", 0x18),
    F("mtu", 0x3),
    F("log_msg_max", 0x5),
    F("reserved_at_48", 0x1),
    F("log_rq_size", 0x4),
    F("log_rq_stride", 0x3),
    F("no_sq", 0x1),
    F("log_sq_size", 0x4),
    F("reserved_at_55", 0x3),
    F("ts_format", 0x2),
    F("data_in_order", 0x1),
    F("rlky", 0x1),
    F("ulp_stateless_offload_mode", 0x4),
    F("counter_set_id", 0x8),
    F("uar_page", 0x18),
    F("reserved_at_80", 0x8),
    F("user_index", 0x18),
    F("reserved_at_a0", 0x3),
    F("log_page_size", 0x5),
    F("remote_qpn", 0x18),
    S("primary_address_path", ADS),
    S("secondary_address_path", ADS),
    F("log_ack_req_freq", 0x4),
    F("reserved_at_384", 0x4),
    F("log_sra_max", 0x3),
    F("reserved_at_38b", 0x2),
    F("retry_count", 0x3),
    F("rnr_retry", 0x3),
    F("reserved_at_393", 0x1),
    F("fre", 0x1),
    F("cur_rnr_retry", 0x3),
    F("cur_retry_count", 0x3),
    F("reserved_at_39b", 0x5),
    F("reserved_at_3a0", 0x20),
    F("reserved_at_3c0", 0x8),
    F("next_send_psn", 0x18),
    F("reserved_at_3e0", 0x8),
    F("cqn_snd", 0x18),
    F("reserved_at_400", 0x8),
    F("deth_sqpn", 0x18),
    F("reserved_at_420", 0x20),
    F("reserved_at_440", 0x8),
    F("last_acked_psn", 0x18),
    F("reserved_at_460", 0x8),
    F("ssn", 0x18),
    F("reserved_at_480", 0x8),
    F("log_rra_max", 0x3),
    F("reserved_at_48b", 0x1),
    F("atomic_mode", 0x4),
    F("rre", 0x1),
    F("rwe", 0x1),
    F("rae", 0x1),
    F("reserved_at_493", 0x1),
    F("page_offset", 0x6),
    F("reserved_at_49a", 0x3),
    F("cd_slave_receive", 0x1),
    F("cd_slave_send", 0x1),
    F("cd_master", 0x1),
    F("reserved_at_4a0", 0x3),
    F("min_rnr_nak", 0x5),
    F("next_rcv_psn", 0x18),
    F("reserved_at_4c0", 0x8),
    F("xrcd", 0x18),
    F("reserved_at_4e0", 0x8),
    F("cqn_rcv", 0x18),
    F("dbr_addr", 0x40),
    F("q_key", 0x20),
    F("reserved_at_560", 0x5),
    F("rq_type", 0x3),
    F("srqn_rmpn_xrqn", 0x18),
    F("reserved_at_580", 0x8),
    F("rmsn", 0x18),
    F("hw_sq_wqebb_counter", 0x10),
    F("sw_sq_wqebb_counter", 0x10),
    F("hw_rq_counter", 0x20),
    F("sw_rq_counter", 0x20),
    F("reserved_at_600", 0x20),
    F("reserved_at_620", 0xf),
    F("cgs", 0x1),
    F("cs_req", 0x8),
    F("cs_res", 0x8),
    F("dc_access_key", 0x40),
    F("reserved_at_680", 0x3),
    F("dbr_umem_valid", 0x1),
    F("reserved_at_684", 0x9c),
    F("dbr_umem_id", 0x20),
];

/// NVSHMEM `src/modules/transport/common/mlx5_ifc.h`, `struct mlx5_ifc_create_qp_in_bits`
/// (without the flexible `pas[]`).
const CREATE_QP_IN: &[Item] = &[
    F("opcode", 0x10),
    F("uid", 0x10),
    F("reserved_at_20", 0x10),
    F("op_mod", 0x10),
    F("reserved_at_40", 0x40),
    F("opt_param_mask", 0x20),
    F("reserved_at_a0", 0x20),
    S("qpc", QPC),
    F("wq_umem_offset", 0x40),
    F("wq_umem_id", 0x20),
    F("wq_umem_valid", 0x1),
    F("reserved_at_861", 0x1f),
];

/// rdma-core `providers/mlx5/mlx5_ifc.h`, `struct mlx5_ifc_create_qp_out_bits`.
const CREATE_QP_OUT: &[Item] = &[
    F("status", 0x8),
    F("reserved_at_8", 0x18),
    F("syndrome", 0x20),
    F("reserved_at_40", 0x8),
    F("qpn", 0x18),
    F("reserved_at_60", 0x20),
];

/// rdma-core `providers/mlx5/mlx5_ifc.h`, `struct mlx5_ifc_rst2init_qp_in_bits`;
/// `mlx5_ifc_init2rtr_qp_in_bits` and `mlx5_ifc_rtr2rts_qp_in_bits` are the same, member for
/// member.
const QP_TRANSITION_IN: &[Item] = &[
    F("opcode", 0x10),
    F("uid", 0x10),
    F("reserved_at_20", 0x10),
    F("op_mod", 0x10),
    F("reserved_at_40", 0x8),
    F("qpn", 0x18),
    F("reserved_at_60", 0x20),
    F("opt_param_mask", 0x20),
    F("reserved_at_a0", 0x20),
    S("qpc", QPC),
    F("reserved_at_800", 0x80),
];

/// rdma-core `providers/mlx5/mlx5_ifc.h`, `struct mlx5_ifc_rst2init_qp_out_bits` (and the same
/// `init2rtr` / `rtr2rts` ones).
const QP_TRANSITION_OUT: &[Item] =
    &[F("status", 0x8), F("reserved_at_8", 0x18), F("syndrome", 0x20), F("reserved_at_40", 0x40)];

/// A flattened member: its dotted path, absolute bit offset and width.
struct Flat {
    path: String,
    bit: usize,
    width: usize,
}

/// Flattens `layout` at bit `base` under `prefix`, checking that every `reserved_at_<hex>`
/// member sits where its name says; returns the structure's size in bits.
fn flatten_into(layout: &[Item], prefix: &str, base: usize, out: &mut Vec<Flat>) -> usize {
    let mut local = 0;
    for item in layout {
        match *item {
            F(name, width) => {
                if let Some(hex) = name.strip_prefix("reserved_at_") {
                    let stated = usize::from_str_radix(hex, 16).expect("reserved_at_<hex>");
                    assert_eq!(stated, local, "{prefix}{name} sits at bit {local:#x}, not where its name says");
                }
                out.push(Flat { path: format!("{prefix}{name}"), bit: base + local, width });
                local += width;
            }
            S(name, inner) => {
                local += flatten_into(inner, &format!("{prefix}{name}."), base + local, out);
            }
        }
    }
    local
}

fn flatten(layout: &[Item]) -> (Vec<Flat>, usize) {
    let mut out = Vec::new();
    let size = flatten_into(layout, "", 0, &mut out);
    (out, size)
}

/// The (bit, width) of `path` in `layout`.
fn lookup(layout: &[Item], path: &str) -> (usize, usize) {
    let (flat, _) = flatten(layout);
    let f = flat.iter().find(|f| f.path == path).unwrap_or_else(|| panic!("{path} is not in the transcription"));
    (f.bit, f.width)
}

fn bits(layout: &[Item]) -> usize {
    flatten(layout).1
}

/// Bit `p` of `buf` in the PRM numbering (bit 0 = MSB of byte 0).
fn bit_at(buf: &[u8], p: usize) -> u8 {
    (buf[p / 8] >> (7 - p % 8)) & 1
}

/// Writes `value` into `width` bits at `bit`, one bit at a time (the tests' own writer,
/// independent of [`Writer`]).
fn put_bits(buf: &mut [u8], bit: usize, width: usize, value: u128) {
    for i in 0..width {
        let p = bit + i;
        let b = ((value >> (width - 1 - i)) & 1) as u8;
        buf[p / 8] = (buf[p / 8] & !(0x80 >> (p % 8))) | (b << (7 - p % 8));
    }
}

/// A distinctive value of `width` bits: top and bottom bits set, an irregular pattern between.
fn pattern(width: usize) -> u128 {
    let mask = if width >= 128 { u128::MAX } else { (1u128 << width) - 1 };
    (0xA5C3_96E1_7B2D_4F08_1357_9BDF_2468_ACE0u128 & mask) | 1 | (1u128 << (width - 1))
}

/// One field of a command struct: its path in the command's transcription, the width of the
/// Rust type that holds it (to know whether a too-wide value can be expressed), and how to
/// set it.
struct Case<C> {
    path: &'static str,
    ty_bits: usize,
    set: fn(&mut C, u128),
}

/// The baseline (a default command) holds the opcode and nothing else.
fn check_baseline<C: Command + Default>(layout: &[Item], op_mod: u128) {
    let base = C::default().to_bytes().unwrap();
    assert_eq!(base.len(), C::IN_BYTES, "{}", C::NAME);
    assert_eq!(base.len() * 8, bits(layout), "{}", C::NAME);
    let mut expected = vec![0u8; C::IN_BYTES];
    let (bit, width) = lookup(layout, "opcode");
    put_bits(&mut expected, bit, width, C::OPCODE.into());
    let (bit, width) = lookup(layout, "op_mod");
    put_bits(&mut expected, bit, width, op_mod);
    assert_eq!(base, expected, "{}: a default command is its opcode alone", C::NAME);
}

/// For every case: set that one field to a distinctive value in an otherwise default command
/// and check that exactly the field's bits (at the transcribed offset) changed, to the value;
/// a value one bit too wide is an error naming the field; and all fields set at once give the
/// baseline plus every field.
fn check_fields<C: Command + Default>(layout: &[Item], cases: &[Case<C>]) {
    let base = C::default().to_bytes().unwrap();
    let mut all = C::default();
    let mut all_expected = base.clone();
    for case in cases {
        let (bit, width) = lookup(layout, case.path);
        let v = pattern(width);
        let mut c = C::default();
        (case.set)(&mut c, v);
        let enc = c.to_bytes().unwrap_or_else(|e| panic!("{}: {e}", case.path));
        assert_eq!(enc.len(), C::IN_BYTES);
        for p in 0..enc.len() * 8 {
            let want = if (bit..bit + width).contains(&p) {
                ((v >> (width - 1 - (p - bit))) & 1) as u8
            } else {
                bit_at(&base, p)
            };
            assert_eq!(
                bit_at(&enc, p),
                want,
                "{} {}: bit {p:#x} (field at {bit:#x}, {width} bits)",
                C::NAME,
                case.path
            );
        }
        if case.ty_bits > width {
            let mut c = C::default();
            (case.set)(&mut c, 1u128 << width);
            match c.to_bytes() {
                Err(DevxError::Range { command, field, value, width: w }) => {
                    assert_eq!((command, field, value, w), (C::NAME, case.path, 1u64 << width, width));
                }
                other => panic!("{} {}: a {}-bit value gave {other:?}", C::NAME, case.path, width + 1),
            }
        }
        (case.set)(&mut all, v);
        put_bits(&mut all_expected, bit, width, v);
    }
    assert_eq!(all.to_bytes().unwrap(), all_expected, "{}: every field at once", C::NAME);
}

/// An output buffer of `len` bytes with `status` and `syndrome` at their transcribed places.
fn out_with_status(layout: &[Item], status: u8, syndrome: u32) -> Vec<u8> {
    let mut out = vec![0u8; bits(layout) / 8];
    let (bit, width) = lookup(layout, "status");
    put_bits(&mut out, bit, width, status.into());
    let (bit, width) = lookup(layout, "syndrome");
    put_bits(&mut out, bit, width, syndrome.into());
    out
}

/// Sizes of every transcribed structure against the PRM sizes (from the headers' own
/// `reserved_at_` names and `MLX5_ST_SZ_*` uses) and against this module's constants.
#[test]
fn sizes_match_the_prm() {
    for (name, layout, prm_bits, ours_bytes) in [
        ("cmd_hca_cap", CMD_HCA_CAP, 0x800, CMD_HCA_CAP_BYTES),
        ("query_hca_cap_in", QUERY_HCA_CAP_IN, 0x80, QUERY_HCA_CAP_IN_BYTES),
        ("query_hca_cap_out", QUERY_HCA_CAP_OUT, 0x8080, QUERY_HCA_CAP_OUT_BYTES),
        ("cqc", CQC, 0x200, CQC_BYTES),
        ("create_cq_in", CREATE_CQ_IN, 0x880, CREATE_CQ_IN_BYTES),
        ("create_cq_out", CREATE_CQ_OUT, 0x80, CREATE_CQ_OUT_BYTES),
        ("ads", ADS, 0x160, ADS_BYTES),
        ("qpc", QPC, 0x740, QPC_BYTES),
        ("create_qp_in", CREATE_QP_IN, 0x880, CREATE_QP_IN_BYTES),
        ("create_qp_out", CREATE_QP_OUT, 0x80, CREATE_QP_OUT_BYTES),
        ("rst2init/init2rtr/rtr2rts_qp_in", QP_TRANSITION_IN, 0x880, MODIFY_QP_IN_BYTES),
        ("rst2init/init2rtr/rtr2rts_qp_out", QP_TRANSITION_OUT, 0x80, MODIFY_QP_OUT_BYTES),
    ] {
        assert_eq!(bits(layout), prm_bits, "{name}");
        assert_eq!(ours_bytes * 8, prm_bits, "{name}");
    }
    assert_eq!((QueryHcaCap::IN_BYTES, QueryHcaCap::OUT_BYTES), (QUERY_HCA_CAP_IN_BYTES, QUERY_HCA_CAP_OUT_BYTES));
    assert_eq!((CreateCq::IN_BYTES, CreateCq::OUT_BYTES), (CREATE_CQ_IN_BYTES, CREATE_CQ_OUT_BYTES));
    assert_eq!((CreateQp::IN_BYTES, CreateQp::OUT_BYTES), (CREATE_QP_IN_BYTES, CREATE_QP_OUT_BYTES));
    for (i, o) in [
        (Rst2InitQp::IN_BYTES, Rst2InitQp::OUT_BYTES),
        (Init2RtrQp::IN_BYTES, Init2RtrQp::OUT_BYTES),
        (Rtr2RtsQp::IN_BYTES, Rtr2RtsQp::OUT_BYTES),
    ] {
        assert_eq!((i, o), (MODIFY_QP_IN_BYTES, MODIFY_QP_OUT_BYTES));
    }
}

/// Every layout constant names a transcribed member and has its offset and width: context
/// fields relative to their context, command fields absolute; and each context sits in its
/// command where the constants say.
#[test]
fn constants_match_the_transcriptions() {
    let in_context = |ctx: &'static str, layout: &'static [Item], fields: &[Field]| {
        let wrapped = [S(ctx, layout)];
        for f in fields {
            assert_eq!(lookup(&wrapped, f.name), (f.bit, f.width), "{}", f.name);
        }
    };
    in_context(
        "cmd_hca_cap",
        CMD_HCA_CAP,
        &[
            CAP_LOG_MAX_QP_SZ,
            CAP_LOG_MAX_QP,
            CAP_LOG_MAX_CQ_SZ,
            CAP_LOG_MAX_CQ,
            CAP_LOG_MAX_RA_REQ_QP,
            CAP_LOG_MAX_RA_RES_QP,
            CAP_PORT_TYPE,
            CAP_LOG_MAX_MSG,
            CAP_ROCE,
            CAP_ATOMIC,
            CAP_UMEM_UID_0,
        ],
    );
    in_context(
        "cq_context",
        CQC,
        &[
            CQC_DBR_UMEM_VALID,
            CQC_CQE_SZ,
            CQC_CC,
            CQC_OI,
            CQC_DBR_UMEM_ID,
            CQC_LOG_CQ_SIZE,
            CQC_UAR_PAGE,
            CQC_C_EQN,
            CQC_LOG_PAGE_SIZE,
            CQC_DBR_ADDR,
        ],
    );
    in_context(
        "qpc",
        QPC,
        &[
            QPC_ST,
            QPC_PM_STATE,
            QPC_PD,
            QPC_MTU,
            QPC_LOG_MSG_MAX,
            QPC_LOG_RQ_SIZE,
            QPC_LOG_RQ_STRIDE,
            QPC_NO_SQ,
            QPC_LOG_SQ_SIZE,
            QPC_TS_FORMAT,
            QPC_UAR_PAGE,
            QPC_LOG_PAGE_SIZE,
            QPC_REMOTE_QPN,
            QPC_PAP_PKEY_INDEX,
            QPC_PAP_GRH,
            QPC_PAP_RLID,
            QPC_PAP_ACK_TIMEOUT,
            QPC_PAP_SRC_ADDR_INDEX,
            QPC_PAP_HOP_LIMIT,
            QPC_PAP_TCLASS,
            QPC_PAP_RGID_RIP,
            QPC_PAP_UDP_SPORT,
            QPC_PAP_ETH_PRIO,
            QPC_PAP_SL,
            QPC_PAP_VHCA_PORT_NUM,
            QPC_PAP_RMAC_47_32,
            QPC_PAP_RMAC_31_0,
            QPC_LOG_SRA_MAX,
            QPC_RETRY_COUNT,
            QPC_RNR_RETRY,
            QPC_NEXT_SEND_PSN,
            QPC_CQN_SND,
            QPC_LOG_RRA_MAX,
            QPC_ATOMIC_MODE,
            QPC_RRE,
            QPC_RWE,
            QPC_RAE,
            QPC_MIN_RNR_NAK,
            QPC_NEXT_RCV_PSN,
            QPC_CQN_RCV,
            QPC_DBR_ADDR,
            QPC_RQ_TYPE,
            QPC_SRQN_RMPN_XRQN,
            QPC_DBR_UMEM_VALID,
            QPC_DBR_UMEM_ID,
        ],
    );
    for (layout, fields) in [
        (QUERY_HCA_CAP_IN, &[CMD_OPCODE, CMD_OP_MOD][..]),
        (
            CREATE_CQ_IN,
            &[CMD_OPCODE, CMD_OP_MOD, CREATE_CQ_IN_CQ_UMEM_OFFSET, CREATE_CQ_IN_CQ_UMEM_ID, CREATE_CQ_IN_CQ_UMEM_VALID]
                [..],
        ),
        (
            CREATE_QP_IN,
            &[CMD_OPCODE, CMD_OP_MOD, CREATE_QP_IN_WQ_UMEM_OFFSET, CREATE_QP_IN_WQ_UMEM_ID, CREATE_QP_IN_WQ_UMEM_VALID]
                [..],
        ),
        (QP_TRANSITION_IN, &[CMD_OPCODE, CMD_OP_MOD, MODIFY_QP_IN_QPN, MODIFY_QP_IN_OPT_PARAM_MASK][..]),
        (QUERY_HCA_CAP_OUT, &[OUT_STATUS, OUT_SYNDROME][..]),
        (CREATE_CQ_OUT, &[OUT_STATUS, OUT_SYNDROME, CREATE_CQ_OUT_CQN][..]),
        (CREATE_QP_OUT, &[OUT_STATUS, OUT_SYNDROME, CREATE_QP_OUT_QPN][..]),
        (QP_TRANSITION_OUT, &[OUT_STATUS, OUT_SYNDROME][..]),
    ] {
        for f in fields {
            assert_eq!(lookup(layout, f.name), (f.bit, f.width), "{}", f.name);
        }
    }
    assert_eq!(
        lookup(QUERY_HCA_CAP_OUT, "capability.cmd_hca_cap.access_other_hca_roce").0,
        QUERY_HCA_CAP_OUT_CAPABILITY
    );
    assert_eq!(lookup(CREATE_CQ_IN, "cq_context.status").0, CREATE_CQ_IN_CQ_CONTEXT);
    assert_eq!(lookup(CREATE_QP_IN, "qpc.state").0, CREATE_QP_IN_QPC);
    assert_eq!(lookup(QP_TRANSITION_IN, "qpc.state").0, MODIFY_QP_IN_QPC);
    assert_eq!(lookup(QPC, "primary_address_path.fl").0, QPC_PRIMARY_ADDRESS_PATH);
}

/// `QUERY_HCA_CAP` input (rdma-core `mlx5_ifc_query_hca_cap_in_bits`): opcode 0x100, `op_mod`.
#[test]
fn query_hca_cap_fields() {
    check_baseline::<QueryHcaCap>(QUERY_HCA_CAP_IN, 0);
    check_fields::<QueryHcaCap>(
        QUERY_HCA_CAP_IN,
        &[Case { path: "op_mod", ty_bits: 16, set: |c, v| c.op_mod = v as u16 }],
    );
    assert_eq!(QueryHcaCap::general(true).op_mod, 0x1);
    assert_eq!(QueryHcaCap::general(false).op_mod, 0x0);
    let buf = QueryHcaCap::general(true).to_bytes().unwrap();
    assert_eq!(&buf[..8], &[0x01, 0x00, 0, 0, 0, 0, 0x00, 0x01]);
}

/// `CREATE_CQ` input (DPDK `mlx5_ifc_create_cq_in_bits` with `mlx5_ifc_cqc_bits`), field by
/// field.
#[test]
fn create_cq_fields() {
    check_baseline::<CreateCq>(CREATE_CQ_IN, 0);
    check_fields::<CreateCq>(
        CREATE_CQ_IN,
        &[
            Case { path: "cq_context.cqe_sz", ty_bits: 8, set: |c, v| c.cqe_sz = v as u8 },
            Case { path: "cq_context.cc", ty_bits: 1, set: |c, v| c.cc = v != 0 },
            Case { path: "cq_context.oi", ty_bits: 1, set: |c, v| c.oi = v != 0 },
            Case { path: "cq_context.log_cq_size", ty_bits: 8, set: |c, v| c.log_cq_size = v as u8 },
            Case { path: "cq_context.uar_page", ty_bits: 32, set: |c, v| c.uar_page = v as u32 },
            Case { path: "cq_context.c_eqn", ty_bits: 32, set: |c, v| c.c_eqn = v as u32 },
            Case { path: "cq_context.log_page_size", ty_bits: 8, set: |c, v| c.log_page_size = v as u8 },
            Case { path: "cq_context.dbr_umem_valid", ty_bits: 1, set: |c, v| c.dbr_umem_valid = v != 0 },
            Case { path: "cq_context.dbr_umem_id", ty_bits: 32, set: |c, v| c.dbr_umem_id = v as u32 },
            Case { path: "cq_context.dbr_addr", ty_bits: 64, set: |c, v| c.dbr_addr = v as u64 },
            Case { path: "cq_umem_valid", ty_bits: 1, set: |c, v| c.cq_umem_valid = v != 0 },
            Case { path: "cq_umem_id", ty_bits: 32, set: |c, v| c.cq_umem_id = v as u32 },
            Case { path: "cq_umem_offset", ty_bits: 64, set: |c, v| c.cq_umem_offset = v as u64 },
        ],
    );
}

/// `CREATE_QP` input (NVSHMEM `mlx5_ifc_create_qp_in_bits` with rdma-core
/// `mlx5_ifc_qpc_bits`), field by field.
#[test]
fn create_qp_fields() {
    check_baseline::<CreateQp>(CREATE_QP_IN, 0);
    check_fields::<CreateQp>(
        CREATE_QP_IN,
        &[
            Case { path: "qpc.st", ty_bits: 8, set: |c, v| c.st = v as u8 },
            Case { path: "qpc.pm_state", ty_bits: 8, set: |c, v| c.pm_state = v as u8 },
            Case { path: "qpc.pd", ty_bits: 32, set: |c, v| c.pd = v as u32 },
            Case { path: "qpc.uar_page", ty_bits: 32, set: |c, v| c.uar_page = v as u32 },
            Case { path: "qpc.log_sq_size", ty_bits: 8, set: |c, v| c.log_sq_size = v as u8 },
            Case { path: "qpc.no_sq", ty_bits: 1, set: |c, v| c.no_sq = v != 0 },
            Case { path: "qpc.log_rq_size", ty_bits: 8, set: |c, v| c.log_rq_size = v as u8 },
            Case { path: "qpc.log_rq_stride", ty_bits: 8, set: |c, v| c.log_rq_stride = v as u8 },
            Case { path: "qpc.rq_type", ty_bits: 8, set: |c, v| c.rq_type = v as u8 },
            Case { path: "qpc.srqn_rmpn_xrqn", ty_bits: 32, set: |c, v| c.srqn_rmpn_xrqn = v as u32 },
            Case { path: "qpc.ts_format", ty_bits: 8, set: |c, v| c.ts_format = v as u8 },
            Case { path: "qpc.cqn_snd", ty_bits: 32, set: |c, v| c.cqn_snd = v as u32 },
            Case { path: "qpc.cqn_rcv", ty_bits: 32, set: |c, v| c.cqn_rcv = v as u32 },
            Case { path: "qpc.log_page_size", ty_bits: 8, set: |c, v| c.log_page_size = v as u8 },
            Case { path: "qpc.dbr_umem_valid", ty_bits: 1, set: |c, v| c.dbr_umem_valid = v != 0 },
            Case { path: "qpc.dbr_umem_id", ty_bits: 32, set: |c, v| c.dbr_umem_id = v as u32 },
            Case { path: "qpc.dbr_addr", ty_bits: 64, set: |c, v| c.dbr_addr = v as u64 },
            Case { path: "wq_umem_valid", ty_bits: 1, set: |c, v| c.wq_umem_valid = v != 0 },
            Case { path: "wq_umem_id", ty_bits: 32, set: |c, v| c.wq_umem_id = v as u32 },
            Case { path: "wq_umem_offset", ty_bits: 64, set: |c, v| c.wq_umem_offset = v as u64 },
        ],
    );
}

/// `RST2INIT_QP` input (rdma-core `mlx5_ifc_rst2init_qp_in_bits`), field by field.
#[test]
fn rst2init_fields() {
    check_baseline::<Rst2InitQp>(QP_TRANSITION_IN, 0);
    check_fields::<Rst2InitQp>(
        QP_TRANSITION_IN,
        &[
            Case { path: "qpn", ty_bits: 32, set: |c, v| c.qpn = v as u32 },
            Case { path: "opt_param_mask", ty_bits: 32, set: |c, v| c.opt_param_mask = v as u32 },
            Case { path: "qpc.pm_state", ty_bits: 8, set: |c, v| c.pm_state = v as u8 },
            Case { path: "qpc.primary_address_path.vhca_port_num", ty_bits: 8, set: |c, v| c.vhca_port_num = v as u8 },
            Case { path: "qpc.primary_address_path.pkey_index", ty_bits: 16, set: |c, v| c.pkey_index = v as u16 },
            Case { path: "qpc.rre", ty_bits: 1, set: |c, v| c.rre = v != 0 },
            Case { path: "qpc.rwe", ty_bits: 1, set: |c, v| c.rwe = v != 0 },
            Case { path: "qpc.rae", ty_bits: 1, set: |c, v| c.rae = v != 0 },
            Case { path: "qpc.atomic_mode", ty_bits: 8, set: |c, v| c.atomic_mode = v as u8 },
        ],
    );
}

/// `INIT2RTR_QP` input (rdma-core `mlx5_ifc_init2rtr_qp_in_bits`, `qpc` and its
/// `primary_address_path` `mlx5_ifc_ads_bits`), field by field — InfiniBand and RoCE fields.
#[test]
fn init2rtr_fields() {
    check_baseline::<Init2RtrQp>(QP_TRANSITION_IN, 0);
    check_fields::<Init2RtrQp>(
        QP_TRANSITION_IN,
        &[
            Case { path: "qpn", ty_bits: 32, set: |c, v| c.qpn = v as u32 },
            Case { path: "opt_param_mask", ty_bits: 32, set: |c, v| c.opt_param_mask = v as u32 },
            Case { path: "qpc.mtu", ty_bits: 8, set: |c, v| c.mtu = v as u8 },
            Case { path: "qpc.log_msg_max", ty_bits: 8, set: |c, v| c.log_msg_max = v as u8 },
            Case { path: "qpc.remote_qpn", ty_bits: 32, set: |c, v| c.remote_qpn = v as u32 },
            Case { path: "qpc.next_rcv_psn", ty_bits: 32, set: |c, v| c.next_rcv_psn = v as u32 },
            Case { path: "qpc.log_rra_max", ty_bits: 8, set: |c, v| c.log_rra_max = v as u8 },
            Case { path: "qpc.min_rnr_nak", ty_bits: 8, set: |c, v| c.min_rnr_nak = v as u8 },
            Case {
                path: "qpc.primary_address_path.vhca_port_num",
                ty_bits: 8,
                set: |c, v| c.path.vhca_port_num = v as u8,
            },
            Case { path: "qpc.primary_address_path.rlid", ty_bits: 16, set: |c, v| c.path.rlid = v as u16 },
            Case { path: "qpc.primary_address_path.sl", ty_bits: 8, set: |c, v| c.path.sl = v as u8 },
            Case { path: "qpc.primary_address_path.grh", ty_bits: 1, set: |c, v| c.path.grh = v != 0 },
            Case {
                path: "qpc.primary_address_path.src_addr_index",
                ty_bits: 8,
                set: |c, v| c.path.src_addr_index = v as u8,
            },
            Case { path: "qpc.primary_address_path.hop_limit", ty_bits: 8, set: |c, v| c.path.hop_limit = v as u8 },
            Case { path: "qpc.primary_address_path.tclass", ty_bits: 8, set: |c, v| c.path.tclass = v as u8 },
            Case {
                path: "qpc.primary_address_path.rgid_rip",
                ty_bits: 128,
                set: |c, v| c.path.rgid_rip = v.to_be_bytes(),
            },
            Case {
                path: "qpc.primary_address_path.rmac_47_32",
                ty_bits: 16,
                set: |c, v| c.path.rmac[..2].copy_from_slice(&(v as u16).to_be_bytes()),
            },
            Case {
                path: "qpc.primary_address_path.rmac_31_0",
                ty_bits: 32,
                set: |c, v| c.path.rmac[2..].copy_from_slice(&(v as u32).to_be_bytes()),
            },
            Case { path: "qpc.primary_address_path.udp_sport", ty_bits: 16, set: |c, v| c.path.udp_sport = v as u16 },
            Case { path: "qpc.primary_address_path.eth_prio", ty_bits: 8, set: |c, v| c.path.eth_prio = v as u8 },
        ],
    );
}

/// `RTR2RTS_QP` input (rdma-core `mlx5_ifc_rtr2rts_qp_in_bits`), field by field.
#[test]
fn rtr2rts_fields() {
    check_baseline::<Rtr2RtsQp>(QP_TRANSITION_IN, 0);
    check_fields::<Rtr2RtsQp>(
        QP_TRANSITION_IN,
        &[
            Case { path: "qpn", ty_bits: 32, set: |c, v| c.qpn = v as u32 },
            Case { path: "opt_param_mask", ty_bits: 32, set: |c, v| c.opt_param_mask = v as u32 },
            Case { path: "qpc.next_send_psn", ty_bits: 32, set: |c, v| c.next_send_psn = v as u32 },
            Case { path: "qpc.retry_count", ty_bits: 8, set: |c, v| c.retry_count = v as u8 },
            Case { path: "qpc.rnr_retry", ty_bits: 8, set: |c, v| c.rnr_retry = v as u8 },
            Case { path: "qpc.log_sra_max", ty_bits: 8, set: |c, v| c.log_sra_max = v as u8 },
            Case { path: "qpc.primary_address_path.ack_timeout", ty_bits: 8, set: |c, v| c.ack_timeout = v as u8 },
        ],
    );
}

/// The MAC goes out in wire order: `rmac_47_32` holds bytes 0–1, `rmac_31_0` bytes 2–5, one
/// contiguous 6-byte run (what rdma-core's `memcpy` into `rmac_47_32` writes); the RoCE
/// constructor turns the GRH on.
#[test]
fn roce_path_bytes() {
    let gid = *b"\0\0\0\0\0\0\0\0\0\0\xff\xff\x0a\x00\x00\x07";
    let mac = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55];
    let path = AddressPath::roce(1, gid, mac, 3, 64, 0xc001, 5);
    assert!(path.grh);
    let cmd = Init2RtrQp { qpn: 7, path, ..Init2RtrQp::default() };
    let buf = cmd.to_bytes().unwrap();
    let (bit, _) = lookup(QP_TRANSITION_IN, "qpc.primary_address_path.rmac_47_32");
    assert_eq!(&buf[bit / 8..bit / 8 + 6], &mac);
    let (bit, _) = lookup(QP_TRANSITION_IN, "qpc.primary_address_path.rgid_rip");
    assert_eq!(&buf[bit / 8..bit / 8 + 16], &gid);
    let ib = AddressPath::infiniband(1, 0x1234, 2);
    assert_eq!((ib.vhca_port_num, ib.rlid, ib.sl, ib.grh), (1, 0x1234, 2, false));
}

/// The three transitions share one layout but carry their own opcodes (rdma-core
/// `MLX5_CMD_OP_RST2INIT_QP` 0x502, `INIT2RTR_QP` 0x503, `RTR2RTS_QP` 0x504).
#[test]
fn transition_opcodes() {
    let op = |b: &[u8]| u16::from_be_bytes([b[0], b[1]]);
    assert_eq!(op(&Rst2InitQp::default().to_bytes().unwrap()), 0x502);
    assert_eq!(op(&Init2RtrQp::default().to_bytes().unwrap()), 0x503);
    assert_eq!(op(&Rtr2RtsQp::default().to_bytes().unwrap()), 0x504);
    assert_eq!(op(&CreateQp::default().to_bytes().unwrap()), 0x500);
    assert_eq!(op(&CreateCq::default().to_bytes().unwrap()), 0x400);
    assert_eq!(op(&QueryHcaCap::default().to_bytes().unwrap()), 0x100);
}

/// `QUERY_HCA_CAP` output (rdma-core `mlx5_ifc_query_hca_cap_out_bits`, capability
/// `mlx5_ifc_cmd_hca_cap_bits`): each parsed field round-trips from its transcribed place,
/// alone and all together.
#[test]
fn hca_caps_parse() {
    type Get = fn(&HcaCaps) -> u128;
    let cases: &[(&str, Get)] = &[
        ("capability.cmd_hca_cap.log_max_qp_sz", |c| c.log_max_qp_sz.into()),
        ("capability.cmd_hca_cap.log_max_qp", |c| c.log_max_qp.into()),
        ("capability.cmd_hca_cap.log_max_cq_sz", |c| c.log_max_cq_sz.into()),
        ("capability.cmd_hca_cap.log_max_cq", |c| c.log_max_cq.into()),
        ("capability.cmd_hca_cap.log_max_ra_req_qp", |c| c.log_max_ra_req_qp.into()),
        ("capability.cmd_hca_cap.log_max_ra_res_qp", |c| c.log_max_ra_res_qp.into()),
        ("capability.cmd_hca_cap.port_type", |c| c.port_type.into()),
        ("capability.cmd_hca_cap.log_max_msg", |c| c.log_max_msg.into()),
        ("capability.cmd_hca_cap.roce", |c| c.roce.into()),
        ("capability.cmd_hca_cap.atomic", |c| c.atomic.into()),
        ("capability.cmd_hca_cap.umem_uid_0", |c| c.umem_uid_0.into()),
    ];
    let zero = vec![0u8; QUERY_HCA_CAP_OUT_BYTES];
    assert_eq!(HcaCaps::parse(&zero).unwrap(), HcaCaps::default());
    let mut all = zero.clone();
    for (path, get) in cases {
        let (bit, width) = lookup(QUERY_HCA_CAP_OUT, path);
        let v = pattern(width);
        let mut out = zero.clone();
        put_bits(&mut out, bit, width, v);
        put_bits(&mut all, bit, width, v);
        let caps = HcaCaps::parse(&out).unwrap();
        for (other, get_other) in cases {
            let want = if other == path { v } else { 0 };
            assert_eq!(get_other(&caps), want, "{path} set, {other} read");
        }
        // The neighbours of the field, all ones, do not leak into it.
        let mut noisy = vec![0xffu8; QUERY_HCA_CAP_OUT_BYTES];
        put_bits(&mut noisy, 0, 8, 0);
        put_bits(&mut noisy, bit, width, 0);
        assert_eq!(get(&HcaCaps::parse(&noisy).unwrap()), 0, "{path}: neighbours leak in");
    }
    let caps = HcaCaps::parse(&all).unwrap();
    for (path, get) in cases {
        assert_eq!(get(&caps), pattern(lookup(QUERY_HCA_CAP_OUT, path).1), "{path}");
    }
    let mut eth = zero.clone();
    let (bit, width) = lookup(QUERY_HCA_CAP_OUT, "capability.cmd_hca_cap.port_type");
    put_bits(&mut eth, bit, width, PORT_TYPE_ETH.into());
    assert!(HcaCaps::parse(&eth).unwrap().is_ethernet());
    assert!(!HcaCaps::parse(&zero).unwrap().is_ethernet());
}

/// `CREATE_CQ` / `CREATE_QP` outputs (DPDK `mlx5_ifc_create_cq_out_bits`, rdma-core
/// `mlx5_ifc_create_qp_out_bits`): the object number round-trips, with all-ones neighbours.
#[test]
fn create_outputs_parse() {
    for (layout, path) in [(CREATE_CQ_OUT, "cqn"), (CREATE_QP_OUT, "qpn")] {
        let (bit, width) = lookup(layout, path);
        let v = pattern(width);
        let mut out = vec![0u8; bits(layout) / 8];
        put_bits(&mut out, bit, width, v);
        let mut noisy = vec![0xffu8; out.len()];
        put_bits(&mut noisy, 0, 8, 0);
        put_bits(&mut noisy, bit, width, v);
        for buf in [&out, &noisy] {
            let got = if path == "cqn" {
                u128::from(CreateCqOut::parse(buf).unwrap().cqn)
            } else {
                u128::from(CreateQpOut::parse(buf).unwrap().qpn)
            };
            assert_eq!(got, v, "{path}");
        }
    }
    check_modify_qp_out::<Rtr2RtsQp>(&[0u8; MODIFY_QP_OUT_BYTES]).unwrap();
}

/// A non-zero `status` is an error carrying `status` and `syndrome` from their transcribed
/// places, whatever the command; the message has the form the driver logs.
#[test]
fn failed_commands_report_status_and_syndrome() {
    let out = out_with_status(CREATE_QP_OUT, 0x03, 0x1a2b_3c4d);
    let err = CreateQpOut::parse(&out).unwrap_err();
    assert_eq!(err, DevxError::Status { command: "CREATE_QP", status: 0x03, syndrome: 0x1a2b_3c4d });
    assert_eq!(err.to_string(), "CREATE_QP failed: status 0x3 syndrome 0x1a2b3c4d (bad parameter)");

    let out = out_with_status(CREATE_CQ_OUT, 0x0f, 0x0000_00ff);
    assert_eq!(
        CreateCqOut::parse(&out).unwrap_err().to_string(),
        "CREATE_CQ failed: status 0xf syndrome 0xff (no resources)"
    );
    let out = out_with_status(QUERY_HCA_CAP_OUT, 0x02, 0xdead_beef);
    assert_eq!(
        HcaCaps::parse(&out).unwrap_err(),
        DevxError::Status { command: "QUERY_HCA_CAP", status: 0x02, syndrome: 0xdead_beef }
    );
    let out = out_with_status(QP_TRANSITION_OUT, 0x10, 0x42);
    assert_eq!(
        check_modify_qp_out::<Init2RtrQp>(&out).unwrap_err().to_string(),
        "INIT2RTR_QP failed: status 0x10 syndrome 0x42 (bad QP state)"
    );
    // A failed status is reported even from an output cut to status and syndrome.
    assert!(matches!(CreateQpOut::parse(&out[..8]), Err(DevxError::Status { status: 0x10, .. })));
    assert_eq!(status_name(0x51), "bad output length");
    assert_eq!(status_name(0x77), "unknown status");
}

/// Outputs shorter than their layout are errors, not panics.
#[test]
fn short_outputs() {
    assert_eq!(
        CreateQpOut::parse(&[0u8; 4]).unwrap_err(),
        DevxError::ShortOutput { command: "CREATE_QP", got: 4, need: 8 }
    );
    assert_eq!(
        CreateCqOut::parse(&[0u8; 8]).unwrap_err(),
        DevxError::ShortOutput { command: "CREATE_CQ", got: 8, need: CREATE_CQ_OUT_BYTES }
    );
    assert_eq!(
        HcaCaps::parse(&[0u8; 256]).unwrap_err(),
        DevxError::ShortOutput { command: "QUERY_HCA_CAP", got: 256, need: QUERY_HCA_CAP_OUT_BYTES }
    );
}

/// Values that do not fit are refused with the field's name, never truncated (the per-command
/// tests try one bit too many for every field whose Rust type can hold it).
#[test]
fn out_of_range_values_name_the_field() {
    let err = CreateQp { log_sq_size: 16, ..CreateQp::default() }.to_bytes().unwrap_err();
    assert_eq!(err.to_string(), "CREATE_QP: qpc.log_sq_size = 0x10 does not fit in its 4 bits");
    let err = CreateCq { c_eqn: 256, ..CreateCq::default() }.to_bytes().unwrap_err();
    assert_eq!(err, DevxError::Range { command: "CREATE_CQ", field: "cq_context.c_eqn", value: 256, width: 8 });
    let err = Rtr2RtsQp { next_send_psn: 1 << 24, ..Rtr2RtsQp::default() }.to_bytes().unwrap_err();
    assert!(err.to_string().contains("qpc.next_send_psn"), "{err}");
    let err = Init2RtrQp { path: AddressPath { eth_prio: 8, ..AddressPath::default() }, ..Init2RtrQp::default() }
        .to_bytes()
        .unwrap_err();
    assert!(err.to_string().contains("qpc.primary_address_path.eth_prio"), "{err}");
}

/// The writer and reader themselves: round trips at every shape, neighbours untouched, and
/// layout errors for fields that straddle a dword, 64-bit fields off a dword, fields past the
/// buffer and byte copies of the wrong size.
#[test]
fn writer_and_reader() {
    let mut buf = vec![0xffu8; 16];
    let mut w = Writer::new(&mut buf, "TEST");
    w.set(Field::new("a", 0x03, 5), 0).unwrap();
    w.set(Field::new("b", 0x20, 32), 0x0123_4567).unwrap();
    w.set(Field::new("c", 0x40, 64), 0x89ab_cdef_0011_2233).unwrap();
    assert_eq!(buf[0], 0b1110_0000);
    assert_eq!(&buf[4..16], &[0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x00, 0x11, 0x22, 0x33]);
    assert_eq!(get("TEST", &buf, Field::new("b", 0x20, 32)).unwrap(), 0x0123_4567);
    assert_eq!(get("TEST", &buf, Field::new("c", 0x40, 64)).unwrap(), 0x89ab_cdef_0011_2233);
    assert_eq!(get("TEST", &buf, Field::new("lo", 0x08, 24)).unwrap(), 0xff_ffff);
    assert_eq!(get_bytes("TEST", &buf, Field::new("d", 0x40, 16)).unwrap(), &[0x89, 0xab]);

    let mut buf = vec![0u8; 8];
    let mut w = Writer::new(&mut buf, "TEST");
    let layout = |r: Result<(), DevxError>| matches!(r, Err(DevxError::Layout { .. }));
    assert!(layout(w.set(Field::new("straddles", 0x1c, 8), 1)));
    assert!(layout(w.set(Field::new("wide", 0x10, 64), 1)));
    assert!(layout(w.set(Field::new("past", 0x40, 1), 1)));
    assert!(layout(w.set(Field::new("empty", 0x00, 0), 0)));
    assert!(layout(w.set_bytes(Field::new("odd", 0x04, 16), &[1, 2])));
    assert!(layout(w.set_bytes(Field::new("size", 0x00, 16), &[1, 2, 3])));
    assert!(matches!(get("TEST", &buf, Field::new("past", 0x40, 8)), Err(DevxError::Layout { .. })));
    assert!(matches!(
        Writer::new(&mut buf, "TEST").set(Field::new("one", 0, 1), 2),
        Err(DevxError::Range { value: 2, width: 1, .. })
    ));
    assert_eq!(buf, vec![0u8; 8], "refused writes leave the buffer as it was");
}
