"""Configs, options and results of the C API as dataclasses.

Configs and options (StreamConfig, ConsumerConfig, PubOpts, FetchOpts, PurgeOpts, CheckOpts,
Placement, SimLink, NodeConfig) take their defaults from the library's own *_init functions,
called once at import: a default changed in C is the binding's default too.

Results (StreamInfo, PubAck, ConsumerMsg, ...) are copies of what a callback was handed: they
own their strings and bytes and stay valid after the callback returned. Field names are the C
field names; counts (nsubjects, nreplicas, ...) become list lengths.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from . import _abi
from ._conv import c_defaults, render, to_c
from ._lib import lib
from .errors import JetraftError

# --- enums -----------------------------------------------------------------------------------


class Retention(enum.IntEnum):
    LIMITS = 0
    INTEREST = 1
    WORKQUEUE = 2


class Discard(enum.IntEnum):
    OLD = 0
    NEW = 1


class Storage(enum.IntEnum):
    FILE = 0
    MEMORY = 1


class Compression(enum.IntEnum):
    NONE = 0
    LZ4 = 1


class DeliverPolicy(enum.IntEnum):
    ALL = 0
    LAST = 1
    NEW = 2
    BY_START_SEQ = 3
    BY_START_TIME = 4
    LAST_PER_SUBJECT = 5


class AckPolicy(enum.IntEnum):
    NONE = 0
    ALL = 1
    EXPLICIT = 2


class ReplayPolicy(enum.IntEnum):
    INSTANT = 0
    ORIGINAL = 1


class PriorityPolicy(enum.IntEnum):
    NONE = 0
    OVERFLOW = 1
    PINNED_CLIENT = 2
    PRIORITIZED = 3


class AckKind(enum.IntEnum):
    """What an acknowledgement says (JetStream's +ACK, -NAK, +WPI, +TERM)."""

    ACK = 0
    NAK = 1
    PROGRESS = 2
    TERM = 3


class AdvisoryKind(enum.IntEnum):
    MAX_DELIVERIES = 1
    TERMINATED = 2
    NAKED = 3
    ACK_SAMPLE = 4
    PINNED = 5
    UNPINNED = 6


class CheckStatus(enum.IntEnum):
    OK = 0
    WARNING = 1
    CRITICAL = 2
    UNKNOWN = 3


class CheckKind(enum.IntEnum):
    UNAVAILABLE = 1
    NO_LEADER = 2
    PEER_COUNT = 3
    OFFLINE = 4
    LAGGED = 5
    INACTIVE = 6
    DAMAGED = 7
    NOT_CURRENT = 8
    UNVOUCHED = 9
    PEER_CHANGE = 10
    MOVE_STUCK = 11
    FSM_FAILED = 12
    REBUILDING = 13


class MoveStatus(enum.IntEnum):
    """What a peer change in progress waits on (jr_move_status)."""

    META = 1
    MEMBERSHIP = 2
    SNAPSHOT = 3
    CATCHUP = 4
    QUORUM = 5
    BLOCKED = 6
    UNAVAILABLE = 7


class Role(enum.IntEnum):
    FOLLOWER = 0
    CANDIDATE = 1
    LEADER = 2
    OBSERVER = 3


class SyncPolicy(enum.IntEnum):
    ALWAYS = 0
    INTERVAL = 1


class LogLevel(enum.IntEnum):
    ERROR = 0
    WARN = 1
    INFO = 2
    DEBUG = 3


#: Where every simulated wall clock starts (2024-01-01T00:00:00Z, ns since the Unix epoch).
SIM_WALL_START_NS = _abi.CONSTANTS["JR_SIM_WALL_START_NS"]

#: "no expectation" for PubOpts.expected_last_seq and expected_last_subject_seq (JR_SEQ_NONE)
SEQ_NONE = _abi.CONSTANTS["JR_SEQ_NONE"]

# --- the library's defaults ------------------------------------------------------------------

_STREAM = c_defaults(_abi.jr_stream_config, "jr_stream_config_init_size")
_CONSUMER = c_defaults(_abi.jr_consumer_config, "jr_consumer_config_init_size")
_PUB = c_defaults(_abi.jr_pub_opts, "jr_pub_opts_init_size")
_FETCH = c_defaults(_abi.jr_fetch_opts, "jr_fetch_opts_init_size")
_PURGE = c_defaults(_abi.jr_purge_opts, "jr_purge_opts_init_size")
_CHECK = c_defaults(_abi.jr_check_opts, "jr_check_opts_init_size")
_LINK = c_defaults(_abi.jr_sim_link, "jr_sim_link_init_size")
_NODE = c_defaults(_abi.jr_node_config, "jr_node_config_init_size")
_GROUP = c_defaults(_abi.jr_group_config, "jr_group_config_init_size")

# --- streams ---------------------------------------------------------------------------------


@dataclass
class Placement:
    """Where a stream's replicas may go: a cluster and required ("tag") or excluded ("!tag")
    server tags."""

    cluster: str | None = None
    tags: list[str] = field(default_factory=list)

    _ctype = _abi.jr_placement
    _init = "jr_placement_init_size"


@dataclass
class StreamConfig:
    """jr_stream_config. subjects default to [name] (in the library)."""

    name: str = ""
    description: str | None = None
    subjects: list[str] = field(default_factory=list)
    retention: Retention = Retention(_STREAM.retention)
    max_consumers: int = _STREAM.max_consumers
    max_msgs: int = _STREAM.max_msgs
    max_bytes: int = _STREAM.max_bytes
    max_age_ns: int = _STREAM.max_age_ns
    max_msgs_per_subject: int = _STREAM.max_msgs_per_subject
    max_msg_size: int = _STREAM.max_msg_size
    discard: Discard = Discard(_STREAM.discard)
    storage: Storage = Storage(_STREAM.storage)
    replicas: int = _STREAM.replicas
    duplicate_window_ns: int = _STREAM.duplicate_window_ns
    placement: Placement | None = None
    sealed: bool = bool(_STREAM.sealed)
    deny_delete: bool = bool(_STREAM.deny_delete)
    deny_purge: bool = bool(_STREAM.deny_purge)
    allow_rollup: bool = bool(_STREAM.allow_rollup)
    compression: Compression = Compression(_STREAM.compression)
    metadata: dict[str, str] = field(default_factory=dict)
    allow_direct: bool = bool(_STREAM.allow_direct)

    _ctype = _abi.jr_stream_config
    _init = "jr_stream_config_init_size"
    _nested = {"placement": Placement}
    _enums = {
        "retention": Retention,
        "discard": Discard,
        "storage": Storage,
        "compression": Compression,
    }


@dataclass
class StreamState:
    msgs: int = 0
    bytes: int = 0
    first_seq: int = 0
    first_ts: int = 0
    last_seq: int = 0
    last_ts: int = 0
    num_subjects: int = 0
    num_deleted: int = 0
    consumers: int = 0

    _ctype = _abi.jr_stream_state
    _init = None


@dataclass
class PeerInfo:
    """One replica of a stream (or consumer) as its leader sees it."""

    name: str = ""
    current: bool = False
    offline: bool = False
    observer: bool = False
    pending: bool = False
    active_ns: int = 0
    lag: int = 0
    damaged: bool = False
    unvouched: bool = False
    fsm_failed: bool = False
    fsm_rebuilding: bool = False

    _ctype = _abi.jr_peer_info
    _init = None


@dataclass
class MoveInfo:
    """A peer change in progress: where it goes, where it came from, what it waits on."""

    target: list[str] = field(default_factory=list)
    origin: list[str] = field(default_factory=list)
    status: MoveStatus | int = 0
    description: str | None = None
    error: str | None = None

    _ctype = _abi.jr_move_info
    _init = None
    _enums = {"status": MoveStatus}


@dataclass
class ClusterInfo:
    """The cluster block of a stream's or consumer's info."""

    name: str | None = None
    group: str | None = None
    leader: str | None = None
    replicas: list[PeerInfo] = field(default_factory=list)
    move: MoveInfo | None = None  # None while the peer set is stable

    _ctype = _abi.jr_cluster_info
    _init = None
    _nested = {"replicas": PeerInfo, "move": MoveInfo}


@dataclass
class StreamInfo:
    config: StreamConfig = field(default_factory=StreamConfig)
    created_ns: int = 0
    state: StreamState = field(default_factory=StreamState)
    cluster: ClusterInfo | None = None

    _ctype = _abi.jr_stream_info
    _init = None
    _nested = {"config": StreamConfig, "state": StreamState, "cluster": ClusterInfo}

    def format_cluster(self) -> str:
        """The "Cluster Information" block as the nats CLI prints it (jr_stream_info_format)."""
        return render(lib.jr_stream_info_format, to_c(self))


@dataclass
class PurgeOpts:
    subject: str | None = None
    keep: int = _PURGE.keep
    seq: int = _PURGE.seq

    _ctype = _abi.jr_purge_opts
    _init = "jr_purge_opts_init_size"


@dataclass
class StoredMsg:
    stream: str = ""
    seq: int = 0
    ts: int = 0
    subject: str = ""
    hdr: bytes = b""
    data: bytes = b""

    _ctype = _abi.jr_stored_msg
    _init = None


@dataclass
class Names:
    """A page of stream or consumer names."""

    total: int = 0
    offset: int = 0
    limit: int = 0
    names: list[str] = field(default_factory=list)

    _ctype = _abi.jr_names
    _init = None


@dataclass
class StreamPage:
    total: int = 0
    offset: int = 0
    limit: int = 0
    streams: list[StreamInfo] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    _ctype = _abi.jr_stream_page
    _init = None
    _nested = {"streams": StreamInfo}


@dataclass
class PubOpts:
    msg_id: str | None = None
    expected_stream: str | None = None
    expected_last_seq: int = _PUB.expected_last_seq
    expected_last_subject_seq: int = _PUB.expected_last_subject_seq
    expected_last_msg_id: str | None = None
    timeout_ms: int = _PUB.timeout_ms

    _ctype = _abi.jr_pub_opts
    _init = "jr_pub_opts_init_size"


@dataclass
class SubjectsPage:
    """A page of a stream's subjects (Node.stream_subjects)."""

    total: int = 0  #: subjects the filter matches
    offset: int = 0  #: how many of them sort before this page
    subjects: dict[str, int] = field(default_factory=dict)  #: subject -> messages, sorted


@dataclass
class DeletedPage:
    """A page of a stream's deleted seqs (Node.stream_deleted)."""

    total: int = 0  #: seqs deleted between the first and last message
    ranges: list[tuple[int, int]] = field(default_factory=list)  #: (first, last), inclusive


@dataclass
class PubAck:
    stream: str = ""
    seq: int = 0
    duplicate: bool = False
    msg: str = ""
    #: with WrongLastMsgIdError: the msg_id of the stream's last message ("" if it had none)
    last_msg_id: str | None = None

    _ctype = _abi.jr_pub_ack
    _init = None


# --- consumers -------------------------------------------------------------------------------


@dataclass
class ConsumerConfig:
    """jr_consumer_config: a pull consumer unless deliver_subject is set."""

    name: str | None = None
    durable_name: str | None = None
    description: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    deliver_policy: DeliverPolicy = DeliverPolicy(_CONSUMER.deliver_policy)
    opt_start_seq: int = _CONSUMER.opt_start_seq
    opt_start_time_ns: int = _CONSUMER.opt_start_time_ns
    ack_policy: AckPolicy = AckPolicy(_CONSUMER.ack_policy)
    ack_wait_ns: int = _CONSUMER.ack_wait_ns
    max_deliver: int = _CONSUMER.max_deliver
    backoff_ns: list[int] = field(default_factory=list)
    filter_subject: str | None = None
    filter_subjects: list[str] = field(default_factory=list)
    replay_policy: ReplayPolicy = ReplayPolicy(_CONSUMER.replay_policy)
    rate_limit_bps: int = _CONSUMER.rate_limit_bps
    sample_freq: str | None = None
    max_waiting: int = _CONSUMER.max_waiting
    max_ack_pending: int = _CONSUMER.max_ack_pending
    headers_only: bool = bool(_CONSUMER.headers_only)
    max_batch: int = _CONSUMER.max_batch
    max_expires_ns: int = _CONSUMER.max_expires_ns
    max_bytes: int = _CONSUMER.max_bytes
    deliver_subject: str | None = None
    deliver_group: str | None = None
    idle_heartbeat_ns: int = _CONSUMER.idle_heartbeat_ns
    flow_control: bool = bool(_CONSUMER.flow_control)
    inactive_threshold_ns: int = _CONSUMER.inactive_threshold_ns
    num_replicas: int = _CONSUMER.num_replicas
    mem_storage: bool = bool(_CONSUMER.mem_storage)
    pause_until_ns: int = _CONSUMER.pause_until_ns
    priority_groups: list[str] = field(default_factory=list)
    priority_policy: PriorityPolicy = PriorityPolicy(_CONSUMER.priority_policy)
    priority_timeout_ns: int = _CONSUMER.priority_timeout_ns

    _ctype = _abi.jr_consumer_config
    _init = "jr_consumer_config_init_size"
    _counts = {"backoff_ns": "nbackoff"}
    _enums = {
        "deliver_policy": DeliverPolicy,
        "ack_policy": AckPolicy,
        "replay_policy": ReplayPolicy,
        "priority_policy": PriorityPolicy,
    }


@dataclass
class ConsumerSeq:
    consumer_seq: int = 0
    stream_seq: int = 0
    last_active_ns: int = 0

    _ctype = _abi.jr_consumer_seq
    _init = None


@dataclass
class ConsumerInfo:
    stream: str = ""
    name: str = ""
    created_ns: int = 0
    config: ConsumerConfig | None = None
    delivered: ConsumerSeq = field(default_factory=ConsumerSeq)
    ack_floor: ConsumerSeq = field(default_factory=ConsumerSeq)
    num_ack_pending: int = 0
    num_redelivered: int = 0
    num_waiting: int = 0
    num_pending: int = 0
    cluster: ClusterInfo | None = None

    _ctype = _abi.jr_consumer_info
    _init = None
    _nested = {
        "config": ConsumerConfig,
        "delivered": ConsumerSeq,
        "ack_floor": ConsumerSeq,
        "cluster": ClusterInfo,
    }

    def format(self, now_ns: int = 0) -> str:
        """`nats consumer info` as the CLI prints it (jr_consumer_info_format); now_ns (ns since
        the Unix epoch) dates the "... ago" parts, 0 leaves them out."""
        return render(lib.jr_consumer_info_format, to_c(self), now_ns)


@dataclass
class ConsumerPage:
    total: int = 0
    offset: int = 0
    limit: int = 0
    consumers: list[ConsumerInfo] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    _ctype = _abi.jr_consumer_page
    _init = None
    _nested = {"consumers": ConsumerInfo}


@dataclass
class ConsumerMsg:
    """A delivered message; give ack_token to Node.ack (on any server)."""

    stream: str = ""
    consumer: str = ""
    subject: str = ""
    hdr: bytes = b""
    data: bytes = b""
    stream_seq: int = 0
    consumer_seq: int = 0
    delivered: int = 0
    pending: int = 0
    ts: int = 0
    ack_token: str = ""
    pin_id: str | None = None

    _ctype = _abi.jr_consumer_msg
    _init = None


@dataclass
class FetchOpts:
    batch: int = _FETCH.batch
    max_bytes: int = _FETCH.max_bytes
    expires_ns: int = _FETCH.expires_ns
    no_wait: bool = bool(_FETCH.no_wait)
    idle_heartbeat_ns: int = _FETCH.idle_heartbeat_ns
    group: str | None = None
    min_pending: int = _FETCH.min_pending
    min_ack_pending: int = _FETCH.min_ack_pending
    id: str | None = None
    priority: int = _FETCH.priority

    _ctype = _abi.jr_fetch_opts
    _init = "jr_fetch_opts_init_size"


@dataclass
class FetchEnd:
    """How a fetch ended: code 0 (batch filled), 404 No Messages, 408 Request Timeout, ..."""

    code: int = 0
    text: str | None = None
    pending_msgs: int = 0
    pending_bytes: int = 0

    _ctype = _abi.jr_fetch_end
    _init = None


@dataclass
class Fetched:
    """The result of a fetch: the messages in delivery order and how it ended."""

    msgs: list[ConsumerMsg] = field(default_factory=list)
    end: FetchEnd | None = None
    heartbeats: int = 0


@dataclass
class Advisory:
    kind: AdvisoryKind | int = 0
    stream: str = ""
    consumer: str = ""
    stream_seq: int = 0
    consumer_seq: int = 0
    deliveries: int = 0
    ack_latency_ns: int = 0
    group: str | None = None
    pin_id: str | None = None

    _ctype = _abi.jr_consumer_advisory
    _init = None
    _enums = {"kind": AdvisoryKind}


# --- cluster and health ----------------------------------------------------------------------


@dataclass
class ServerInfo:
    name: str = ""
    cluster: str | None = None
    tags: list[str] = field(default_factory=list)
    leader: bool = False
    current: bool = False
    offline: bool = False
    active_ns: int = 0
    lag: int = 0
    assets: int = 0
    damaged: bool = False
    draining: bool = False  # jr_server_evacuate: no new placements, replicas moving off
    remaining: list[str] = field(default_factory=list)  # draining: "STREAM", "STREAM/CONSUMER"
    unplaced: list[str] = field(default_factory=list)  # of those, the ones no server can take

    _ctype = _abi.jr_server_info
    _init = None


@dataclass
class MetaInfo:
    """The cluster as the meta leader sees it (the JetStream server report)."""

    cluster: str | None = None
    leader: str | None = None
    servers: list[ServerInfo] = field(default_factory=list)
    nstreams: int = 0
    removed: bool = False  # this server was peer-removed from the cluster
    # streams and consumers with a replica on a removed server (re-placed when one qualifies)
    under_replicated: list[str] = field(default_factory=list)

    _ctype = _abi.jr_meta_info
    _init = None
    _nested = {"servers": ServerInfo}
    _counts = {"servers": "nservers"}


@dataclass
class CheckOpts:
    peer_expect: int = _CHECK.peer_expect
    lag_critical: int = _CHECK.lag_critical
    seen_critical_ns: int = _CHECK.seen_critical_ns

    _ctype = _abi.jr_check_opts
    _init = "jr_check_opts_init_size"


@dataclass
class CheckProblem:
    kind: CheckKind | int = 0
    severity: CheckStatus | int = 0
    count: int = 0
    text: str = ""

    _ctype = _abi.jr_check_problem
    _init = None
    _enums = {"kind": CheckKind, "severity": CheckStatus}


@dataclass
class CheckResult:
    status: CheckStatus | int = CheckStatus.UNKNOWN
    stream: str = ""
    consumer: str | None = None
    leader: str | None = None
    expected: int = 0
    peers: int = 0
    current: int = 0
    lag_critical: int = 0
    seen_critical_ns: int = 0
    problems: list[CheckProblem] = field(default_factory=list)
    #: the most entries a replica is behind the leader (its catch-up lag)
    lag_max: int = 0
    #: the error of the info request when the check could not get one (the result is then a
    #: critical one saying so); None when it did
    error: JetraftError | None = None

    _ctype = _abi.jr_check_result
    _init = None
    _nested = {"problems": CheckProblem}
    _enums = {"status": CheckStatus}

    def format(self) -> str:
        """The nats CLI's Nagios line (jr_stream_check_format), e.g. "OK ORDERS OK:3 peers …"."""
        return render(lib.jr_stream_check_format, to_c(self))


@dataclass
class GroupHealth:
    """A local replica that is unwell (jr_group_health). ``damaged``: its Raft replica lost data
    and waits for repair (it never leads); ``fsm_failed``: its state machine failed and is
    rebuilt from its peers (its log is whole); ``peers_fsm_failed``: on the group's leader, the
    members that told it their state machine failed or is being rebuilt. Role and flags come
    from one read of its group."""

    group: int = 0
    stream: str = ""
    consumer: str | None = None
    role: Role | int = 0
    no_leader: bool = False
    no_quorum: bool = False
    damaged: bool = False
    unvouched: bool = False
    text: str = ""
    fsm_failed: bool = False
    peers_fsm_failed: int = 0

    _ctype = _abi.jr_group_health
    _init = None
    _enums = {"role": Role}


@dataclass
class NodeHealth:
    """A node's health as JetStream's /healthz sees it."""

    healthy: bool = False
    meta_leader: str | None = None
    meta_current: bool = False
    meta_lag: int = 0
    meta_text: str = ""
    nstreams: int = 0
    nconsumers: int = 0
    groups: list[GroupHealth] = field(default_factory=list)
    #: what this node's stream replicas store: messages, bytes in memory and in files
    msgs: int = 0
    memory_bytes: int = 0
    file_bytes: int = 0

    _ctype = _abi.jr_node_health_info
    _init = None
    _nested = {"groups": GroupHealth}


@dataclass
class NodeStats:
    frames_sent: int = 0
    frames_received: int = 0
    frames_rejected: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    wal_syncs: int = 0
    wal_bytes: int = 0
    groups: int = 0
    msgs_unknown_group: int = 0
    msgs_unroutable: int = 0
    send_failures: int = 0
    msgs_unknown_type: int = 0

    _ctype = _abi.jr_node_stats
    _init = None


# --- nodes and the sim fixture ---------------------------------------------------------------


@dataclass
class NodeConfig:
    """The parts of jr_node_config a host chooses (name, peers, wal_dir, host, vfs and alloc
    are given by whoever opens the node: the sim fixture, or Node.open)."""

    cluster: str | None = None
    tags: list[str] = field(default_factory=list)
    store_dir: str | None = None
    election_timeout_ms: int = _NODE.election_timeout_ms
    heartbeat_ms: int = _NODE.heartbeat_ms
    sync_policy: SyncPolicy = SyncPolicy(_NODE.sync_policy)
    sync_interval_ms: int = _NODE.sync_interval_ms
    max_frame_bytes: int = _NODE.max_frame_bytes
    wal_segment_bytes: int = _NODE.wal_segment_bytes
    unique_tag: str | None = None
    max_store_bytes: int = _NODE.max_store_bytes
    max_assets: int = _NODE.max_assets
    streams: bool = bool(_NODE.streams)
    request_timeout_ms: int = _NODE.request_timeout_ms
    max_payload: int = _NODE.max_payload
    store_block_bytes: int = _NODE.store_block_bytes
    join: bool = bool(_NODE.join)  # join a running cluster through its peers (seeds)
    # encryption at rest: the 32-byte node key (JR_NODE_KEY_BYTES); None or b"": none
    key: bytes | None = None
    # bounds of a peer change (a replica joining a stream while it copies the messages, and
    # the log a leader keeps for followers); 0: the default
    catchup_queue_bytes: int = _NODE.catchup_queue_bytes
    catchup_log_bytes: int = _NODE.catchup_log_bytes
    keep_bytes: int = _NODE.keep_bytes
    join_keep_bytes: int = _NODE.join_keep_bytes
    # a request whose group's replica here has known no leader this long ends at once
    # (JetStream's "temporarily unavailable"); 0: it waits until its deadline
    leaderless_fail_ms: int = _NODE.leaderless_fail_ms

    _ctype = _abi.jr_node_config
    _init = "jr_node_config_init_size"
    _enums = {"sync_policy": SyncPolicy}


@dataclass
class SimLink:
    """Behaviour of one directed simulated link (probabilities in [0, 1])."""

    drop: float = _LINK.drop
    duplicate: float = _LINK.duplicate
    reorder: float = _LINK.reorder
    delay_min_ns: int = _LINK.delay_min_ns
    delay_max_ns: int = _LINK.delay_max_ns
    bytes_per_sec: int = _LINK.bytes_per_sec  # bandwidth (0: unlimited)

    _ctype = _abi.jr_sim_link
    _init = "jr_sim_link_init_size"


@dataclass
class SimStats:
    frames_sent: int = 0
    frames_delivered: int = 0
    frames_dropped: int = 0
    frames_duplicated: int = 0
    bytes_delivered: int = 0
    events: int = 0

    _ctype = _abi.jr_sim_stats
    _init = None


# --- raw groups ------------------------------------------------------------------------------


@dataclass
class GroupFloor:
    """Where a server re-joining a group starts (jr_group_floor_get on the leader)."""

    term: int = 0
    commit_term: int = 0
    commit_index: int = 0

    _ctype = _abi.jr_group_floor
    _init = None


@dataclass
class GroupStatus:
    id: int = 0
    role: Role | int = 0
    term: int = 0
    commit_index: int = 0
    applied_index: int = 0
    last_index: int = 0
    snapshot_index: int = 0
    npeers: int = 0
    damaged: bool = False
    unvouched: bool = False
    fsm_failed: bool = False

    _ctype = _abi.jr_group_status
    _init = None
    _enums = {"role": Role}


@dataclass
class PeerStatus:
    name: str = ""
    voter: bool = False
    current: bool = False
    match_index: int = 0
    lag: int = 0
    last_seen_ns: int = 0
    damaged: bool = False
    unvouched: bool = False
    fsm_failed: bool = False
    fsm_rebuilding: bool = False

    _ctype = _abi.jr_peer_status
    _init = None


#: The default of jr_group_config.snapshot_entries.
GROUP_SNAPSHOT_ENTRIES_DEFAULT = _GROUP.snapshot_entries

#: The public names: every enum, config and result class, and the constants.
__all__ = [
    n for n, v in list(globals().items())
    if not n.startswith("_")
    and ((isinstance(v, type) and v.__module__ == __name__) or n.isupper())
]
