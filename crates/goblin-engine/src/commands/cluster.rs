//! CLUSTER: Goblin runs as a standalone server, so, as a Redis started
//! without cluster-enabled, every CLUSTER subcommand answers that cluster
//! support is disabled. The subcommands are still in the table with their
//! flags, so COMMAND describes them and scripts are refused the same ones.

use crate::command::spec::{flag, CmdResult, CommandSpec, Group};
use crate::command::Ctx;
use crate::Error;

fn cluster_disabled(_ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    Err(Error::err("This instance has cluster support disabled"))
}

static CLUSTER_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "addslots",
        arity: -3,
        flags: flag::STALE | flag::ADMIN | flag::NO_ASYNC_LOADING,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Assign new hash slots to receiving node",
        complexity: "O(N) where N is the total number of hash slot arguments",
        syntax: "slot:integer...",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "addslotsrange",
        arity: -4,
        flags: flag::STALE | flag::ADMIN | flag::NO_ASYNC_LOADING,
        group: Group::Cluster,
        since: "7.0.0",
        summary: "Assign new hash slots to receiving node",
        complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments.",
        syntax: "start-slot_end-slot:block(start-slot:integer end-slot:integer)...",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "bumpepoch",
        arity: 2,
        flags: flag::STALE | flag::ADMIN | flag::NO_ASYNC_LOADING,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Advance the cluster config epoch",
        complexity: "O(1)",
        tips: &["nondeterministic_output"],
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "count-failure-reports",
        arity: 3,
        flags: flag::STALE | flag::ADMIN,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Return the number of failure reports active for a given node",
        complexity: "O(N) where N is the number of failure reports",
        syntax: "node-id:string",
        tips: &["nondeterministic_output"],
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "countkeysinslot",
        arity: 3,
        flags: flag::STALE,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Return the number of local keys in the specified hash slot",
        complexity: "O(1)",
        syntax: "slot:integer",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "delslots",
        arity: -3,
        flags: flag::STALE | flag::ADMIN | flag::NO_ASYNC_LOADING,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Set hash slots as unbound in receiving node",
        complexity: "O(N) where N is the total number of hash slot arguments",
        syntax: "slot:integer...",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "delslotsrange",
        arity: -4,
        flags: flag::STALE | flag::ADMIN | flag::NO_ASYNC_LOADING,
        group: Group::Cluster,
        since: "7.0.0",
        summary: "Set hash slots as unbound in receiving node",
        complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments.",
        syntax: "start-slot_end-slot:block(start-slot:integer end-slot:integer)...",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "failover",
        arity: -2,
        flags: flag::STALE | flag::ADMIN | flag::NO_ASYNC_LOADING,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Forces a replica to perform a manual failover of its master.",
        complexity: "O(1)",
        syntax: "[options:oneof(FORCE|TAKEOVER)]",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "flushslots",
        arity: 2,
        flags: flag::STALE | flag::ADMIN | flag::NO_ASYNC_LOADING,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Delete a node's own slots information",
        complexity: "O(1)",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "forget",
        arity: 3,
        flags: flag::STALE | flag::ADMIN | flag::NO_ASYNC_LOADING,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Remove a node from the nodes table",
        complexity: "O(1)",
        syntax: "node-id:string",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "getkeysinslot",
        arity: 4,
        flags: flag::STALE,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Return local key names in the specified hash slot",
        complexity: "O(log(N)) where N is the number of requested keys",
        syntax: "slot:integer count:integer",
        tips: &["nondeterministic_output"],
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "help",
        arity: 2,
        flags: flag::LOADING | flag::STALE,
        group: Group::Cluster,
        since: "5.0.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "info",
        arity: 2,
        flags: flag::STALE,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Provides info about Redis Cluster node state",
        complexity: "O(1)",
        tips: &["nondeterministic_output"],
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "keyslot",
        arity: 3,
        flags: flag::STALE,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Returns the hash slot of the specified key",
        complexity: "O(N) where N is the number of bytes in the key",
        syntax: "key:string",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "links",
        arity: 2,
        flags: flag::STALE,
        group: Group::Cluster,
        since: "7.0.0",
        summary: "Returns a list of all TCP links to and from peer nodes in cluster",
        complexity: "O(N) where N is the total number of Cluster nodes",
        tips: &["nondeterministic_output"],
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "meet",
        arity: -4,
        flags: flag::STALE | flag::ADMIN | flag::NO_ASYNC_LOADING,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Force a node cluster to handshake with another node",
        complexity: "O(1)",
        history: &[("4.0.0", "Added the optional `cluster_bus_port` argument.")],
        syntax: "ip:string port:integer [cluster_bus_port:integer]{since:4.0.0}",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "myid",
        arity: 2,
        flags: flag::STALE,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Return the node id",
        complexity: "O(1)",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "nodes",
        arity: 2,
        flags: flag::STALE,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Get Cluster config for the node",
        complexity: "O(N) where N is the total number of Cluster nodes",
        tips: &["nondeterministic_output"],
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "replicas",
        arity: 3,
        flags: flag::STALE | flag::ADMIN,
        group: Group::Cluster,
        since: "5.0.0",
        summary: "List replica nodes of the specified master node",
        complexity: "O(1)",
        syntax: "node-id:string",
        tips: &["nondeterministic_output"],
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "replicate",
        arity: 3,
        flags: flag::STALE | flag::ADMIN | flag::NO_ASYNC_LOADING,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Reconfigure a node as a replica of the specified master node",
        complexity: "O(1)",
        syntax: "node-id:string",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "reset",
        arity: -2,
        flags: flag::STALE | flag::ADMIN | flag::NOSCRIPT,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Reset a Redis Cluster node",
        complexity: "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.",
        syntax: "[hard_soft:oneof(HARD|SOFT)]",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "saveconfig",
        arity: 2,
        flags: flag::STALE | flag::ADMIN | flag::NO_ASYNC_LOADING,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Forces the node to save cluster state on disk",
        complexity: "O(1)",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "set-config-epoch",
        arity: 3,
        flags: flag::STALE | flag::ADMIN | flag::NO_ASYNC_LOADING,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Set the configuration epoch in a new node",
        complexity: "O(1)",
        syntax: "config-epoch:integer",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "setslot",
        arity: -4,
        flags: flag::STALE | flag::ADMIN | flag::NO_ASYNC_LOADING,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Bind a hash slot to a specific node",
        complexity: "O(1)",
        syntax: "slot:integer subcommand:oneof(IMPORTING node-id:string|MIGRATING node-id:string|NODE node-id:string|STABLE)",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "shards",
        arity: 2,
        flags: flag::STALE,
        group: Group::Cluster,
        since: "7.0.0",
        summary: "Get array of cluster slots to node mappings",
        complexity: "O(N) where N is the total number of cluster nodes",
        history: &[],
        tips: &["nondeterministic_output"],
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "slaves",
        arity: 3,
        flags: flag::STALE | flag::ADMIN,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "List replica nodes of the specified master node",
        complexity: "O(1)",
        doc_flags: &["deprecated"],
        deprecated_since: "5.0.0",
        replaced_by: "`CLUSTER REPLICAS`",
        syntax: "node-id:string",
        tips: &["nondeterministic_output"],
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "slots",
        arity: 2,
        flags: flag::STALE,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Get array of Cluster slot to node mappings",
        complexity: "O(N) where N is the total number of Cluster nodes",
        doc_flags: &["deprecated"],
        deprecated_since: "7.0.0",
        replaced_by: "`CLUSTER SHARDS`",
        history: &[("4.0.0", "Added node IDs."), ("7.0.0", "Added additional networking metadata field.")],
        tips: &["nondeterministic_output"],
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
];

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "cluster",
        arity: -2,
        group: Group::Cluster,
        subcommands: CLUSTER_SUBCOMMANDS,
        since: "3.0.0",
        summary: "A container for cluster commands",
        complexity: "Depends on subcommand.",
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "readonly",
        arity: 1,
        flags: flag::FAST | flag::LOADING | flag::STALE,
        acl: &["connection"],
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Enables read queries for a connection to a cluster replica node",
        complexity: "O(1)",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "readwrite",
        arity: 1,
        flags: flag::FAST | flag::LOADING | flag::STALE,
        acl: &["connection"],
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Disables read queries for a connection to a cluster replica node",
        complexity: "O(1)",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
];
