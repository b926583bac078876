"""ctypes mirror of the public C ABI (include/jetraft.h and include/jetraft/sim.h).

This module only describes: struct layouts, callback types, function prototypes and the
constants the binding relies on. It loads nothing and imports nothing from the package, so
the build can read it on its own (tools/gen_layout.py generates from STRUCTS and CONSTANTS a C
program that prints the real offsets and values, and tests/test_layout.py compares them with
what is declared here: a header change that breaks the binding fails that test).

Field order and types follow the headers exactly; a struct that grows in C must grow here too.
Opaque handles (jr_node, jr_sim, jr_group, jr_subscription, jr_sim_disk, jr_vfs,
jr_snapshot_writer) are plain c_void_p.
"""

from __future__ import annotations

import ctypes
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_char_p,
    c_double,
    c_int,
    c_int32,
    c_int64,
    c_size_t,
    c_uint,
    c_uint32,
    c_uint64,
    c_void_p,
)

#: The JR_VERSION_NUMBER (include/jetraft/base.h) this binding was written for.
VERSION_NUMBER = 100

c_str_array = POINTER(c_char_p)  # const char *const *


# --- base, errors, plugins -------------------------------------------------------------------


class jr_iovec(Structure):
    _fields_ = [("base", c_void_p), ("len", c_size_t)]


class jr_kv(Structure):
    _fields_ = [("key", c_char_p), ("value", c_char_p)]


class jr_allocator(Structure):
    _fields_ = [
        ("version", c_int),
        ("ctx", c_void_p),
        ("malloc", c_void_p),
        ("realloc", c_void_p),
        ("free", c_void_p),
    ]


host_send_fn = CFUNCTYPE(c_int, c_void_p, c_char_p, POINTER(jr_iovec), c_int)
host_now_fn = CFUNCTYPE(c_uint64, c_void_p)
host_arm_fn = CFUNCTYPE(None, c_void_p, c_uint64)
host_log_fn = CFUNCTYPE(None, c_void_p, c_int, c_char_p)
host_wall_fn = CFUNCTYPE(c_uint64, c_void_p)
host_sync_start_fn = CFUNCTYPE(None, c_void_p, c_void_p)  # (ctx, jr_sync_job *)


class jr_host(Structure):
    _fields_ = [
        ("version", c_int),
        ("ctx", c_void_p),
        ("send", host_send_fn),
        ("now", host_now_fn),
        ("arm", host_arm_fn),
        ("log", host_log_fn),
        ("wall", host_wall_fn),
        ("sync_start", host_sync_start_fn),
    ]


# --- node ------------------------------------------------------------------------------------


class jr_node_config(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("name", c_char_p),
        ("cluster", c_char_p),
        ("tags", c_str_array),
        ("ntags", c_size_t),
        ("peers", c_str_array),
        ("npeers", c_size_t),
        ("wal_dir", c_char_p),
        ("store_dir", c_char_p),
        ("vfs", c_void_p),
        ("host", POINTER(jr_host)),
        ("alloc", POINTER(jr_allocator)),
        ("election_timeout_ms", c_uint32),
        ("heartbeat_ms", c_uint32),
        ("sync_policy", c_int),
        ("sync_interval_ms", c_uint32),
        ("seed", c_uint64),
        ("max_frame_bytes", c_uint32),
        ("wal_segment_bytes", c_uint64),
        ("unique_tag", c_char_p),
        ("max_store_bytes", c_uint64),
        ("max_assets", c_uint32),
        ("streams", c_int),
        ("request_timeout_ms", c_uint32),
        ("errbuf", c_void_p),
        ("errbuf_len", c_size_t),
        ("max_payload", c_uint32),
        ("store_block_bytes", c_uint64),
        ("join", c_int),
        ("key", c_void_p),
        ("key_len", c_size_t),
        ("catchup_queue_bytes", c_uint64),
        ("catchup_log_bytes", c_uint64),
        ("keep_bytes", c_uint64),
        ("join_keep_bytes", c_uint64),
        ("leaderless_fail_ms", c_uint32),
    ]


class jr_node_stats(Structure):
    _fields_ = [("size", c_size_t)] + [
        (n, c_uint64)
        for n in (
            "frames_sent",
            "frames_received",
            "frames_rejected",
            "bytes_sent",
            "bytes_received",
            "wal_syncs",
            "wal_bytes",
            "groups",
            "msgs_unknown_group",
            "msgs_unroutable",
            "send_failures",
            "msgs_unknown_type",
        )
    ]


# --- raw groups ------------------------------------------------------------------------------

fsm_apply_fn = CFUNCTYPE(None, c_void_p, c_uint64, c_void_p, c_size_t)
fsm_snapshot_fn = CFUNCTYPE(c_int, c_void_p, c_void_p)
fsm_restore_fn = CFUNCTYPE(c_int, c_void_p, c_uint64, c_void_p, c_size_t)


class jr_fsm(Structure):
    _fields_ = [
        ("version", c_int),
        ("ctx", c_void_p),
        ("apply", fsm_apply_fn),
        ("snapshot", fsm_snapshot_fn),
        ("restore", fsm_restore_fn),
    ]


class jr_group_floor(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("term", c_uint64),
        ("commit_term", c_uint64),
        ("commit_index", c_uint64),
    ]


class jr_group_config(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("id", c_uint64),
        ("voters", c_str_array),
        ("nvoters", c_size_t),
        ("fsm", POINTER(jr_fsm)),
        ("snapshot_entries", c_uint64),
        ("join", POINTER(jr_group_floor)),
    ]


class jr_group_status(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("id", c_uint64),
        ("role", c_int),
        ("term", c_uint64),
        ("commit_index", c_uint64),
        ("applied_index", c_uint64),
        ("last_index", c_uint64),
        ("snapshot_index", c_uint64),
        ("npeers", c_size_t),
        ("damaged", c_int),
        ("unvouched", c_int),
        ("fsm_failed", c_int),
    ]


class jr_peer_status(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("name", c_char_p),
        ("voter", c_int),
        ("current", c_int),
        ("match_index", c_uint64),
        ("lag", c_uint64),
        ("last_seen_ns", c_uint64),
        ("damaged", c_int),
        ("unvouched", c_int),
        ("fsm_failed", c_int),
        ("fsm_rebuilding", c_int),
    ]


propose_fn = CFUNCTYPE(None, c_void_p, c_int, c_uint64)
done_fn = CFUNCTYPE(None, c_void_p, c_int)


# --- cluster ---------------------------------------------------------------------------------


class jr_peer_info(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("name", c_char_p),
        ("current", c_int),
        ("offline", c_int),
        ("observer", c_int),
        ("pending", c_int),
        ("active_ns", c_uint64),
        ("lag", c_uint64),
        ("damaged", c_int),
        ("unvouched", c_int),
        ("fsm_failed", c_int),
        ("fsm_rebuilding", c_int),
    ]


class jr_move_info(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("target", c_str_array),
        ("ntarget", c_size_t),
        ("origin", c_str_array),
        ("norigin", c_size_t),
        ("status", c_int),
        ("description", c_char_p),
        ("error", c_char_p),
    ]


class jr_cluster_info(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("name", c_char_p),
        ("group", c_char_p),
        ("leader", c_char_p),
        ("replicas", POINTER(POINTER(jr_peer_info))),
        ("nreplicas", c_size_t),
        ("move", POINTER(jr_move_info)),
    ]


class jr_server_info(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("name", c_char_p),
        ("cluster", c_char_p),
        ("tags", c_str_array),
        ("ntags", c_size_t),
        ("leader", c_int),
        ("current", c_int),
        ("offline", c_int),
        ("active_ns", c_uint64),
        ("lag", c_uint64),
        ("assets", c_uint32),
        ("damaged", c_int),
        ("draining", c_int),
        ("remaining", c_str_array),
        ("nremaining", c_size_t),
        ("unplaced", c_str_array),
        ("nunplaced", c_size_t),
    ]


class jr_meta_info(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("cluster", c_char_p),
        ("leader", c_char_p),
        ("servers", POINTER(POINTER(jr_server_info))),
        ("nservers", c_size_t),
        ("nstreams", c_size_t),
        ("removed", c_int),
        ("under_replicated", c_str_array),
        ("nunder_replicated", c_size_t),
    ]


meta_info_fn = CFUNCTYPE(None, c_void_p, c_int, c_char_p, POINTER(jr_meta_info))

# --- streams ---------------------------------------------------------------------------------


class jr_placement(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("cluster", c_char_p),
        ("tags", c_str_array),
        ("ntags", c_size_t),
    ]


class jr_stream_config(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("name", c_char_p),
        ("description", c_char_p),
        ("subjects", c_str_array),
        ("nsubjects", c_size_t),
        ("retention", c_int),
        ("max_consumers", c_int64),
        ("max_msgs", c_int64),
        ("max_bytes", c_int64),
        ("max_age_ns", c_uint64),
        ("max_msgs_per_subject", c_int64),
        ("max_msg_size", c_int32),
        ("discard", c_int),
        ("storage", c_int),
        ("replicas", c_int),
        ("duplicate_window_ns", c_uint64),
        ("placement", POINTER(jr_placement)),
        ("sealed", c_int),
        ("deny_delete", c_int),
        ("deny_purge", c_int),
        ("allow_rollup", c_int),
        ("compression", c_int),
        ("metadata", POINTER(jr_kv)),
        ("nmetadata", c_size_t),
        ("allow_direct", c_int),
    ]


class jr_stream_state(Structure):
    _fields_ = [("size", c_size_t)] + [
        (n, c_uint64)
        for n in (
            "msgs",
            "bytes",
            "first_seq",
            "first_ts",
            "last_seq",
            "last_ts",
            "num_subjects",
            "num_deleted",
            "consumers",
        )
    ]


class jr_stream_info(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("config", POINTER(jr_stream_config)),
        ("created_ns", c_uint64),
        ("state", POINTER(jr_stream_state)),
        ("cluster", POINTER(jr_cluster_info)),
    ]


class jr_purge_opts(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("subject", c_char_p),
        ("keep", c_uint64),
        ("seq", c_uint64),
    ]


class jr_stored_msg(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("stream", c_char_p),
        ("seq", c_uint64),
        ("ts", c_uint64),
        ("subject", c_char_p),
        ("hdr", c_void_p),
        ("hdr_len", c_size_t),
        ("data", c_void_p),
        ("len", c_size_t),
    ]


class jr_names(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("total", c_uint64),
        ("offset", c_uint64),
        ("limit", c_uint64),
        ("names", c_str_array),
        ("nnames", c_size_t),
    ]


class jr_stream_page(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("total", c_uint64),
        ("offset", c_uint64),
        ("limit", c_uint64),
        ("streams", POINTER(POINTER(jr_stream_info))),
        ("nstreams", c_size_t),
        ("missing", c_str_array),
        ("nmissing", c_size_t),
    ]


class jr_pub_opts(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("msg_id", c_char_p),
        ("expected_stream", c_char_p),
        ("expected_last_seq", c_uint64),
        ("expected_last_subject_seq", c_uint64),
        ("expected_last_msg_id", c_char_p),
        ("timeout_ms", c_uint32),
    ]


class jr_subject_count(Structure):
    _fields_ = [
        ("subject", c_char_p),
        ("msgs", c_uint64),
    ]


class jr_subjects_page(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("total", c_uint64),
        ("offset", c_uint64),
        ("subjects", POINTER(jr_subject_count)),
        ("nsubjects", c_size_t),
    ]


class jr_seq_range(Structure):
    _fields_ = [
        ("first", c_uint64),
        ("last", c_uint64),
    ]


class jr_deleted_page(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("total", c_uint64),
        ("ranges", POINTER(jr_seq_range)),
        ("nranges", c_size_t),
    ]


class jr_pub_ack(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("stream", c_char_p),
        ("seq", c_uint64),
        ("duplicate", c_int),
        ("msg", c_char_p),
        ("last_msg_id", c_char_p),
    ]


stream_fn = CFUNCTYPE(None, c_void_p, c_int, c_char_p)
purge_fn = CFUNCTYPE(None, c_void_p, c_int, c_char_p, c_uint64)
create_fn = CFUNCTYPE(None, c_void_p, c_int, c_char_p, c_int)
subjects_fn = CFUNCTYPE(None, c_void_p, c_int, c_char_p, POINTER(jr_subjects_page))
deleted_fn = CFUNCTYPE(None, c_void_p, c_int, c_char_p, POINTER(jr_deleted_page))
msg_fn = CFUNCTYPE(None, c_void_p, c_int, c_char_p, POINTER(jr_stored_msg))
stream_info_fn = CFUNCTYPE(None, c_void_p, c_int, c_char_p, POINTER(jr_stream_info))
names_fn = CFUNCTYPE(None, c_void_p, c_int, c_char_p, POINTER(jr_names))
stream_page_fn = CFUNCTYPE(None, c_void_p, c_int, c_char_p, POINTER(jr_stream_page))
publish_fn = CFUNCTYPE(None, c_void_p, c_int, POINTER(jr_pub_ack))

# --- consumers -------------------------------------------------------------------------------


class jr_consumer_config(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("name", c_char_p),
        ("durable_name", c_char_p),
        ("description", c_char_p),
        ("metadata", POINTER(jr_kv)),
        ("nmetadata", c_size_t),
        ("deliver_policy", c_int),
        ("opt_start_seq", c_uint64),
        ("opt_start_time_ns", c_uint64),
        ("ack_policy", c_int),
        ("ack_wait_ns", c_int64),
        ("max_deliver", c_int64),
        ("backoff_ns", POINTER(c_int64)),
        ("nbackoff", c_size_t),
        ("filter_subject", c_char_p),
        ("filter_subjects", c_str_array),
        ("nfilter_subjects", c_size_t),
        ("replay_policy", c_int),
        ("rate_limit_bps", c_uint64),
        ("sample_freq", c_char_p),
        ("max_waiting", c_int64),
        ("max_ack_pending", c_int64),
        ("headers_only", c_int),
        ("max_batch", c_int64),
        ("max_expires_ns", c_int64),
        ("max_bytes", c_int64),
        ("deliver_subject", c_char_p),
        ("deliver_group", c_char_p),
        ("idle_heartbeat_ns", c_int64),
        ("flow_control", c_int),
        ("inactive_threshold_ns", c_int64),
        ("num_replicas", c_int),
        ("mem_storage", c_int),
        ("pause_until_ns", c_uint64),
        ("priority_groups", c_str_array),
        ("npriority_groups", c_size_t),
        ("priority_policy", c_int),
        ("priority_timeout_ns", c_int64),
    ]


class jr_consumer_seq(Structure):
    _fields_ = [
        ("consumer_seq", c_uint64),
        ("stream_seq", c_uint64),
        ("last_active_ns", c_uint64),
    ]


class jr_consumer_info(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("stream", c_char_p),
        ("name", c_char_p),
        ("created_ns", c_uint64),
        ("config", POINTER(jr_consumer_config)),
        ("delivered", jr_consumer_seq),
        ("ack_floor", jr_consumer_seq),
        ("num_ack_pending", c_uint64),
        ("num_redelivered", c_uint64),
        ("num_waiting", c_uint64),
        ("num_pending", c_uint64),
        ("cluster", POINTER(jr_cluster_info)),
    ]


class jr_consumer_page(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("total", c_uint64),
        ("offset", c_uint64),
        ("limit", c_uint64),
        ("consumers", POINTER(POINTER(jr_consumer_info))),
        ("nconsumers", c_size_t),
        ("missing", c_str_array),
        ("nmissing", c_size_t),
    ]


class jr_consumer_msg(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("stream", c_char_p),
        ("consumer", c_char_p),
        ("subject", c_char_p),
        ("hdr", c_void_p),
        ("hdr_len", c_size_t),
        ("data", c_void_p),
        ("len", c_size_t),
        ("stream_seq", c_uint64),
        ("consumer_seq", c_uint64),
        ("delivered", c_uint32),
        ("pending", c_uint64),
        ("ts", c_uint64),
        ("ack_token", c_char_p),
        ("pin_id", c_char_p),
    ]


class jr_fetch_opts(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("batch", c_int64),
        ("max_bytes", c_int64),
        ("expires_ns", c_int64),
        ("no_wait", c_int),
        ("idle_heartbeat_ns", c_int64),
        ("group", c_char_p),
        ("min_pending", c_int64),
        ("min_ack_pending", c_int64),
        ("id", c_char_p),
        ("priority", c_int),
    ]


class jr_fetch_end(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("code", c_int),
        ("text", c_char_p),
        ("pending_msgs", c_uint64),
        ("pending_bytes", c_uint64),
    ]


class jr_consumer_advisory(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("kind", c_int),
        ("stream", c_char_p),
        ("consumer", c_char_p),
        ("stream_seq", c_uint64),
        ("consumer_seq", c_uint64),
        ("deliveries", c_uint32),
        ("ack_latency_ns", c_uint64),
        ("group", c_char_p),
        ("pin_id", c_char_p),
    ]


consumer_fn = CFUNCTYPE(None, c_void_p, c_int, c_char_p, c_char_p)
consumer_info_fn = CFUNCTYPE(None, c_void_p, c_int, c_char_p, POINTER(jr_consumer_info))
consumer_page_fn = CFUNCTYPE(None, c_void_p, c_int, c_char_p, POINTER(jr_consumer_page))
fetch_fn = CFUNCTYPE(
    None, c_void_p, c_int, c_char_p, POINTER(jr_consumer_msg), POINTER(jr_fetch_end)
)
push_fn = CFUNCTYPE(None, c_void_p, c_int, POINTER(jr_consumer_msg))
advisory_fn = CFUNCTYPE(None, c_void_p, POINTER(jr_consumer_advisory))

# --- health ----------------------------------------------------------------------------------


class jr_check_opts(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("peer_expect", c_int),
        ("lag_critical", c_uint64),
        ("seen_critical_ns", c_uint64),
    ]


class jr_check_problem(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("kind", c_int),
        ("severity", c_int),
        ("count", c_uint32),
        ("text", c_char_p),
    ]


class jr_check_result(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("status", c_int),
        ("stream", c_char_p),
        ("consumer", c_char_p),
        ("leader", c_char_p),
        ("expected", c_uint32),
        ("peers", c_uint32),
        ("current", c_uint32),
        ("lag_critical", c_uint64),
        ("seen_critical_ns", c_uint64),
        ("problems", POINTER(POINTER(jr_check_problem))),
        ("nproblems", c_size_t),
        ("lag_max", c_uint64),
    ]


class jr_group_health(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("group", c_uint64),
        ("stream", c_char_p),
        ("consumer", c_char_p),
        ("role", c_int),
        ("no_leader", c_int),
        ("no_quorum", c_int),
        ("damaged", c_int),
        ("unvouched", c_int),
        ("text", c_char_p),
        ("fsm_failed", c_int),
        ("peers_fsm_failed", c_int),
    ]


class jr_node_health_info(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("healthy", c_int),
        ("meta_leader", c_char_p),
        ("meta_current", c_int),
        ("meta_lag", c_uint64),
        ("meta_text", c_char_p),
        ("nstreams", c_size_t),
        ("nconsumers", c_size_t),
        ("groups", POINTER(POINTER(jr_group_health))),
        ("ngroups", c_size_t),
        ("msgs", c_uint64),
        ("memory_bytes", c_uint64),
        ("file_bytes", c_uint64),
    ]


check_fn = CFUNCTYPE(None, c_void_p, c_int, c_char_p, POINTER(jr_check_result))
node_health_fn = CFUNCTYPE(None, c_void_p, c_int, c_char_p, POINTER(jr_node_health_info))

# --- the sim fixture -------------------------------------------------------------------------


class jr_sim_link(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("drop", c_double),
        ("duplicate", c_double),
        ("reorder", c_double),
        ("delay_min_ns", c_uint64),
        ("delay_max_ns", c_uint64),
        ("bytes_per_sec", c_uint64),
    ]


sim_configure_fn = CFUNCTYPE(None, c_void_p, c_uint, POINTER(jr_node_config))
sim_step_fn = CFUNCTYPE(None, c_void_p, c_void_p)
sim_apply_fn = CFUNCTYPE(None, c_void_p, c_uint, c_uint64, c_uint64, c_uint64, c_void_p, c_size_t)
sim_restore_fn = CFUNCTYPE(None, c_void_p, c_uint, c_uint64, c_uint64)
sim_log_fn = CFUNCTYPE(None, c_void_p, c_uint, c_int, c_char_p)
sim_pred_fn = CFUNCTYPE(c_int, c_void_p, c_void_p)
sim_files_fn = CFUNCTYPE(c_int, c_void_p, c_char_p, c_uint64)


class jr_sim_config(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("nodes", c_uint),
        ("seed", c_uint64),
        ("link", POINTER(jr_sim_link)),
        ("election_timeout_ms", c_uint32),
        ("heartbeat_ms", c_uint32),
        ("torn_writes", c_int),
        ("alloc", POINTER(jr_allocator)),
        ("arg", c_void_p),
        ("configure", sim_configure_fn),
        ("on_step", sim_step_fn),
        ("on_apply", sim_apply_fn),
        ("on_restore", sim_restore_fn),
        ("no_digest", c_int),
        ("on_log", sim_log_fn),
        ("sync_delay_ns", c_uint64),
    ]


class jr_sim_stats(Structure):
    _fields_ = [("size", c_size_t)] + [
        (n, c_uint64)
        for n in (
            "frames_sent",
            "frames_delivered",
            "frames_dropped",
            "frames_duplicated",
            "bytes_delivered",
            "events",
            "durable_early",
        )
    ]


# --- secure links (link.h) ---------------------------------------------------------------------


class jr_link_config(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("role", c_int),
        ("authority", c_void_p),
        ("identity", c_void_p),
        ("cert", c_void_p),
        ("cert_len", c_size_t),
        ("cluster", c_char_p),
        ("expect_name", c_char_p),
        ("max_frame", c_uint32),
        ("alloc", POINTER(jr_allocator)),
    ]


#: Every struct the binding declares, by its C name (the layout test walks this).
STRUCTS: dict[str, type[Structure]] = {
    name: obj
    for name, obj in list(globals().items())
    if name.startswith("jr_") and isinstance(obj, type) and issubclass(obj, Structure)
}

#: Constants of the headers the binding relies on, by C name.
CONSTANTS: dict[str, int] = {
    "JR_VERSION_NUMBER": VERSION_NUMBER,
    "JR_HOST_VERSION": 3,
    "JR_FSM_VERSION": 1,
    "JR_SEQ_NONE": 2**64 - 1,
    "JR_SIM_MAX_NODES": 16,
    "JR_SIM_WALL_START_NS": 1704067200000000000,
    "JR_NAMES_LIMIT": 1024,
    "JR_LIST_LIMIT": 256,
    "JR_SUBJECTS_LIMIT": 10000,
    "JR_DELETED_LIMIT": 2000,
    "JR_MAX_REPLICAS": 5,
    "JR_DRAIN_LIST_MAX": 64,
    "JR_STREAM_NAME_MAX": 255,
    "JR_CONSUMER_NAME_MAX": 255,
    "JR_GROUP_ID_HOST_MAX": (1 << 48) - 1,
    "JR_RETAIN_LIMITS": 0,
    "JR_RETAIN_INTEREST": 1,
    "JR_RETAIN_WORKQUEUE": 2,
    "JR_DISCARD_OLD": 0,
    "JR_DISCARD_NEW": 1,
    "JR_NODE_KEY_BYTES": 32,
    "JR_CATCHUP_QUEUE_BYTES_DEFAULT": 64 << 20,
    "JR_CATCHUP_LOG_BYTES_DEFAULT": 256 << 20,
    "JR_KEEP_BYTES_DEFAULT": 64 << 20,
    "JR_JOIN_KEEP_BYTES_DEFAULT": 256 << 20,
    "JR_LOG_BOUND_MIN": 1 << 20,
    "JR_LOG_BOUND_MAX": 1 << 40,
    "JR_STORAGE_FILE": 0,
    "JR_STORAGE_MEMORY": 1,
    "JR_COMPRESS_NONE": 0,
    "JR_COMPRESS_LZ4": 1,
    "JR_DELIVER_ALL": 0,
    "JR_DELIVER_LAST": 1,
    "JR_DELIVER_NEW": 2,
    "JR_DELIVER_BY_START_SEQ": 3,
    "JR_DELIVER_BY_START_TIME": 4,
    "JR_DELIVER_LAST_PER_SUBJECT": 5,
    "JR_ACK_NONE": 0,
    "JR_ACK_ALL": 1,
    "JR_ACK_EXPLICIT": 2,
    "JR_REPLAY_INSTANT": 0,
    "JR_REPLAY_ORIGINAL": 1,
    "JR_PRIORITY_NONE": 0,
    "JR_PRIORITY_OVERFLOW": 1,
    "JR_PRIORITY_PINNED_CLIENT": 2,
    "JR_PRIORITY_PRIORITIZED": 3,
    "JR_ACK_ACK": 0,
    "JR_ACK_NAK": 1,
    "JR_ACK_PROGRESS": 2,
    "JR_ACK_TERM": 3,
    "JR_ADVISORY_MAX_DELIVERIES": 1,
    "JR_ADVISORY_TERMINATED": 2,
    "JR_ADVISORY_NAKED": 3,
    "JR_ADVISORY_ACK_SAMPLE": 4,
    "JR_ADVISORY_PINNED": 5,
    "JR_ADVISORY_UNPINNED": 6,
    "JR_CHECK_OK": 0,
    "JR_CHECK_WARNING": 1,
    "JR_CHECK_CRITICAL": 2,
    "JR_CHECK_UNKNOWN": 3,
    "JR_SYNC_ALWAYS": 0,
    "JR_SYNC_INTERVAL": 1,
    "JR_FOLLOWER": 0,
    "JR_CANDIDATE": 1,
    "JR_LEADER": 2,
    "JR_OBSERVER": 3,
    "JR_LOG_ERROR": 0,
    "JR_LOG_WARN": 1,
    "JR_LOG_INFO": 2,
    "JR_LOG_DEBUG": 3,
    "JR_MOVE_META": 1,
    "JR_MOVE_MEMBERSHIP": 2,
    "JR_MOVE_SNAPSHOT": 3,
    "JR_MOVE_CATCHUP": 4,
    "JR_MOVE_QUORUM": 5,
    "JR_MOVE_BLOCKED": 6,
    "JR_MOVE_UNAVAILABLE": 7,
    "JR_CHECK_PEER_CHANGE": 10,
    "JR_CHECK_MOVE_STUCK": 11,
    "JR_CHECK_FSM_FAILED": 12,
    "JR_CHECK_REBUILDING": 13,
    "JR_LINK_AUTHORITY": 1,
    "JR_LINK_IDENTITY": 2,
    "JR_LINK_DIALER": 1,
    "JR_LINK_ACCEPTOR": 2,
    "JR_LINK_HANDSHAKE": 0,
    "JR_LINK_OPEN": 1,
    "JR_LINK_CLOSED": 2,
    "JR_LINK_FAILED": 3,
    "JR_LINK_KEY_BYTES": 46,
    "JR_LINK_CERT_MAX": 612,
    "JR_LINK_TEXT_MAX": 1024,
    "JR_LINK_FRAME_OVERHEAD": 21,
}

# --- function prototypes ---------------------------------------------------------------------

_node = c_void_p
_sim = c_void_p
P = POINTER

#: name -> (restype, argtypes) of every public function the binding calls.
FUNCTIONS: dict[str, tuple[object, list[object]]] = {
    # base, errors
    "jr_version": (c_char_p, []),
    "jr_version_number": (c_int, []),
    "jr_strerror": (c_char_p, [c_int]),
    "jr_err_name": (c_char_p, [c_int]),
    # node
    "jr_node_config_init_size": (None, [P(jr_node_config), c_size_t]),
    "jr_node_open": (c_int, [P(jr_node_config), P(c_void_p)]),
    "jr_node_recv": (c_int, [_node, c_char_p, c_void_p, c_size_t]),
    "jr_node_tick": (c_int, [_node]),
    "jr_sync_job_run": (c_int, [c_void_p]),
    "jr_node_synced": (c_int, [_node, c_void_p, c_int]),
    "jr_node_deadline": (c_uint64, [_node]),
    "jr_node_close": (None, [_node]),
    "jr_node_name": (c_char_p, [_node]),
    "jr_node_errmsg": (c_char_p, [_node]),
    "jr_node_stats_get": (c_int, [_node, P(jr_node_stats)]),
    "jr_vfs_posix": (c_void_p, []),
    # raw groups
    "jr_group_config_init_size": (None, [P(jr_group_config), c_size_t]),
    "jr_group_open": (c_int, [_node, P(jr_group_config), P(c_void_p)]),
    "jr_group_close": (None, [c_void_p]),
    "jr_node_group": (c_void_p, [_node, c_uint64]),
    "jr_group_propose": (c_int, [c_void_p, c_void_p, c_size_t, propose_fn, c_void_p]),
    "jr_group_leader": (c_char_p, [c_void_p]),
    "jr_group_transfer": (c_int, [c_void_p, c_char_p, done_fn, c_void_p]),
    "jr_group_add_observer": (c_int, [c_void_p, c_char_p, done_fn, c_void_p]),
    "jr_group_promote": (c_int, [c_void_p, c_char_p, done_fn, c_void_p]),
    "jr_group_remove": (c_int, [c_void_p, c_char_p, done_fn, c_void_p]),
    "jr_group_status_get": (c_int, [c_void_p, P(jr_group_status)]),
    "jr_group_floor_get": (c_int, [c_void_p, P(jr_group_floor)]),
    "jr_group_peer": (c_int, [c_void_p, c_size_t, P(jr_peer_status)]),
    "jr_group_rescue": (c_int, [c_void_p, c_char_p]),
    "jr_node_rescue": (c_int, [_node, c_char_p]),
    "jr_snapshot_write": (c_int, [c_void_p, c_void_p, c_size_t]),
    # cluster
    "jr_meta_info_get": (c_int, [_node, meta_info_fn, c_void_p]),
    "jr_meta_stepdown": (c_int, [_node, c_char_p, stream_fn, c_void_p]),
    "jr_server_peer_remove": (c_int, [_node, c_char_p, stream_fn, c_void_p]),
    "jr_server_evacuate": (c_int, [_node, c_char_p, stream_fn, c_void_p]),
    "jr_server_evacuate_cancel": (c_int, [_node, c_char_p, stream_fn, c_void_p]),
    # streams
    "jr_placement_init_size": (None, [P(jr_placement), c_size_t]),
    "jr_stream_config_init_size": (None, [P(jr_stream_config), c_size_t]),
    "jr_stream_info_format": (c_int, [P(jr_stream_info), c_char_p, c_size_t]),
    "jr_stream_add": (c_int, [_node, P(jr_stream_config), stream_fn, c_void_p]),
    "jr_stream_create": (c_int, [_node, P(jr_stream_config), create_fn, c_void_p]),
    "jr_stream_update": (c_int, [_node, P(jr_stream_config), stream_fn, c_void_p]),
    "jr_stream_delete": (c_int, [_node, c_char_p, stream_fn, c_void_p]),
    "jr_purge_opts_init_size": (None, [P(jr_purge_opts), c_size_t]),
    "jr_stream_purge": (c_int, [_node, c_char_p, P(jr_purge_opts), purge_fn, c_void_p]),
    "jr_stream_msg_delete": (c_int, [_node, c_char_p, c_uint64, c_int, stream_fn, c_void_p]),
    "jr_stream_msg_get": (c_int, [_node, c_char_p, c_uint64, msg_fn, c_void_p]),
    "jr_stream_get_last": (c_int, [_node, c_char_p, c_char_p, msg_fn, c_void_p]),
    "jr_stream_get_next": (c_int, [_node, c_char_p, c_uint64, c_char_p, msg_fn, c_void_p]),
    "jr_stream_stepdown": (c_int, [_node, c_char_p, c_char_p, stream_fn, c_void_p]),
    "jr_stream_evacuate": (c_int, [_node, c_char_p, c_char_p, stream_fn, c_void_p]),
    "jr_stream_cancel_move": (c_int, [_node, c_char_p, stream_fn, c_void_p]),
    "jr_stream_info_get": (c_int, [_node, c_char_p, stream_info_fn, c_void_p]),
    "jr_stream_direct_get": (c_int, [_node, c_char_p, c_uint64, c_char_p, msg_fn, c_void_p]),
    "jr_stream_names": (c_int, [_node, c_char_p, c_uint64, names_fn, c_void_p]),
    "jr_stream_subjects": (c_int, [_node, c_char_p, c_char_p, c_uint64, subjects_fn, c_void_p]),
    "jr_stream_deleted": (c_int, [_node, c_char_p, c_uint64, deleted_fn, c_void_p]),
    "jr_stream_list": (c_int, [_node, c_char_p, c_uint64, stream_page_fn, c_void_p]),
    "jr_pub_opts_init_size": (None, [P(jr_pub_opts), c_size_t]),
    "jr_publish": (
        c_int,
        [_node, c_char_p, c_void_p, c_size_t, c_void_p, c_size_t, P(jr_pub_opts), publish_fn,
         c_void_p],
    ),
    # consumers
    "jr_consumer_config_init_size": (None, [P(jr_consumer_config), c_size_t]),
    "jr_consumer_add": (c_int, [_node, c_char_p, P(jr_consumer_config), consumer_fn, c_void_p]),
    "jr_consumer_create": (
        c_int, [_node, c_char_p, P(jr_consumer_config), consumer_fn, c_void_p]),
    "jr_consumer_update": (
        c_int, [_node, c_char_p, P(jr_consumer_config), consumer_fn, c_void_p]),
    "jr_consumer_pause": (c_int, [_node, c_char_p, c_char_p, c_uint64, stream_fn, c_void_p]),
    "jr_consumer_delete": (c_int, [_node, c_char_p, c_char_p, stream_fn, c_void_p]),
    "jr_consumer_info_format": (c_int, [P(jr_consumer_info), c_uint64, c_char_p, c_size_t]),
    "jr_consumer_info_get": (c_int, [_node, c_char_p, c_char_p, consumer_info_fn, c_void_p]),
    "jr_consumer_names": (c_int, [_node, c_char_p, c_uint64, names_fn, c_void_p]),
    "jr_consumer_list": (c_int, [_node, c_char_p, c_uint64, consumer_page_fn, c_void_p]),
    "jr_fetch_opts_init_size": (None, [P(jr_fetch_opts), c_size_t]),
    "jr_consumer_fetch": (
        c_int, [_node, c_char_p, c_char_p, P(jr_fetch_opts), fetch_fn, c_void_p]),
    "jr_consumer_ack": (
        c_int, [_node, c_char_p, c_int, c_int64, c_char_p, stream_fn, c_void_p]),
    "jr_consumer_reset": (c_int, [_node, c_char_p, c_char_p, c_uint64, stream_fn, c_void_p]),
    "jr_consumer_stepdown": (c_int, [_node, c_char_p, c_char_p, c_char_p, stream_fn, c_void_p]),
    "jr_consumer_evacuate": (
        c_int, [_node, c_char_p, c_char_p, c_char_p, stream_fn, c_void_p]),
    "jr_consumer_cancel_move": (c_int, [_node, c_char_p, c_char_p, stream_fn, c_void_p]),
    "jr_consumer_unpin": (c_int, [_node, c_char_p, c_char_p, c_char_p, stream_fn, c_void_p]),
    "jr_consumer_ack_next": (c_int, [_node, c_char_p, P(jr_fetch_opts), fetch_fn, c_void_p]),
    "jr_consumer_subscribe": (
        c_int, [_node, c_char_p, c_char_p, push_fn, c_void_p, P(c_void_p)]),
    "jr_subscription_close": (None, [c_void_p]),
    "jr_consumer_advisories": (c_int, [_node, advisory_fn, c_void_p]),
    # health
    "jr_check_opts_init_size": (None, [P(jr_check_opts), c_size_t]),
    "jr_stream_check": (c_int, [_node, c_char_p, P(jr_check_opts), check_fn, c_void_p]),
    "jr_consumer_check": (
        c_int, [_node, c_char_p, c_char_p, P(jr_check_opts), check_fn, c_void_p]),
    "jr_stream_check_format": (c_int, [P(jr_check_result), c_char_p, c_size_t]),
    "jr_node_health": (c_int, [_node, node_health_fn, c_void_p]),
    # sim
    "jr_sim_link_init_size": (None, [P(jr_sim_link), c_size_t]),
    "jr_sim_config_init_size": (None, [P(jr_sim_config), c_size_t]),
    "jr_sim_new": (c_int, [P(jr_sim_config), P(c_void_p)]),
    "jr_sim_free": (None, [_sim]),
    "jr_sim_add_node": (c_int, [_sim, c_int, P(c_uint)]),
    "jr_sim_size": (c_uint, [_sim]),
    "jr_sim_node": (c_void_p, [_sim, c_uint]),
    "jr_sim_name": (c_char_p, [_sim, c_uint]),
    "jr_sim_index": (c_int, [_sim, c_char_p]),
    "jr_sim_vfs": (c_void_p, [_sim, c_uint]),
    "jr_sim_now": (c_uint64, [_sim]),
    "jr_sim_wall": (c_uint64, [_sim, c_uint]),
    "jr_sim_set_wall": (c_int, [_sim, c_uint, c_uint64]),
    "jr_sim_step": (c_int, [_sim]),
    "jr_sim_run_for": (None, [_sim, c_uint64]),
    "jr_sim_run_until": (c_int, [_sim, sim_pred_fn, c_void_p, c_uint64]),
    "jr_sim_set_link": (c_int, [_sim, c_uint, c_uint, P(jr_sim_link)]),
    "jr_sim_cut": (c_int, [_sim, c_uint, c_uint]),
    "jr_sim_partition": (c_int, [_sim, P(c_uint), c_size_t]),
    "jr_sim_heal": (None, [_sim]),
    "jr_sim_pause": (c_int, [_sim, c_uint, c_uint64]),
    "jr_sim_crash": (c_int, [_sim, c_uint]),
    "jr_sim_restart": (c_int, [_sim, c_uint]),
    "jr_sim_files": (c_int, [_sim, c_uint, sim_files_fn, c_void_p]),
    "jr_sim_cut_tail": (c_int, [_sim, c_uint, c_char_p, c_uint64]),
    "jr_sim_flip_bits": (c_int, [_sim, c_uint, c_char_p, c_uint64, c_uint64, c_uint]),
    "jr_sim_zero": (c_int, [_sim, c_uint, c_char_p, c_uint64, c_uint64]),
    "jr_sim_remove_file": (c_int, [_sim, c_uint, c_char_p]),
    "jr_sim_disk_save": (c_int, [_sim, c_uint, P(c_void_p)]),
    "jr_sim_disk_restore": (c_int, [_sim, c_uint, c_void_p]),
    "jr_sim_disk_free": (None, [c_void_p]),
    "jr_sim_digest": (c_uint64, [_sim]),
    "jr_sim_stats_get": (c_int, [_sim, P(jr_sim_stats)]),
    # secure links
    "jr_link_key_generate": (c_int, [c_int, P(jr_allocator), P(c_void_p)]),
    "jr_link_key_encode": (c_int, [c_void_p, c_int, c_void_p, c_size_t, P(c_size_t)]),
    "jr_link_key_decode": (c_int, [c_void_p, c_size_t, P(jr_allocator), P(c_void_p)]),
    "jr_link_key_role": (c_int, [c_void_p]),
    "jr_link_key_has_secret": (c_int, [c_void_p]),
    "jr_link_key_public": (None, [c_void_p, c_void_p]),
    "jr_link_key_free": (None, [c_void_p]),
    "jr_link_cert_sign": (
        c_int, [c_void_p, c_void_p, c_char_p, c_char_p, c_void_p, c_size_t, P(c_size_t)]),
    "jr_link_cert_check": (c_int, [c_void_p, c_size_t, c_void_p, c_char_p, c_char_p]),
    "jr_link_cert_name": (c_int, [c_void_p, c_size_t, c_char_p, c_size_t]),
    "jr_link_text_encode": (c_int, [c_void_p, c_size_t, c_char_p, c_size_t, P(c_size_t)]),
    "jr_link_text_decode": (c_int, [c_char_p, c_size_t, c_void_p, c_size_t, P(c_size_t)]),
    "jr_link_config_init_size": (None, [P(jr_link_config), c_size_t]),
    "jr_link_new": (c_int, [P(jr_link_config), P(c_void_p)]),
    "jr_link_feed": (
        c_int, [c_void_p, c_void_p, c_size_t, P(c_size_t), P(c_void_p), P(c_size_t)]),
    "jr_link_pending_out": (None, [c_void_p, P(c_void_p), P(c_size_t)]),
    "jr_link_out_done": (c_int, [c_void_p, c_size_t]),
    "jr_link_seal": (
        c_int, [c_void_p, P(jr_iovec), c_int, c_void_p, c_size_t, P(c_size_t)]),
    "jr_link_seal_final": (c_int, [c_void_p, c_void_p, c_size_t, P(c_size_t)]),
    "jr_link_eof": (c_int, [c_void_p]),
    "jr_link_state": (c_int, [c_void_p]),
    "jr_link_peer_name": (c_char_p, [c_void_p]),
    "jr_link_errmsg": (c_char_p, [c_void_p]),
    "jr_link_free": (None, [c_void_p]),
}


def bind(lib: ctypes.CDLL) -> None:
    """Sets restype and argtypes of every function in FUNCTIONS on lib (a missing symbol
    raises AttributeError naming it)."""
    for name, (restype, argtypes) in FUNCTIONS.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
