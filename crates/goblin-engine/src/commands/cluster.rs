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
        flags: flag::STALE | flag::ADMIN,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Assigns new hash slots to a node.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "addslotsrange",
        arity: -4,
        flags: flag::STALE | flag::ADMIN,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Assigns new hash slot ranges to a node.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "bumpepoch",
        arity: 2,
        flags: flag::STALE | flag::ADMIN,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Advances the cluster config epoch.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "count-failure-reports",
        arity: 3,
        flags: flag::STALE | flag::ADMIN,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Returns the number of active failure reports active for a node.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "countkeysinslot",
        arity: 3,
        flags: flag::STALE,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Returns the number of keys in a hash slot.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "delslots",
        arity: -3,
        flags: flag::STALE | flag::ADMIN,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Sets hash slots as unbound for a node.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "delslotsrange",
        arity: -4,
        flags: flag::STALE | flag::ADMIN,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Sets hash slot ranges as unbound for a node.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "failover",
        arity: -2,
        flags: flag::STALE | flag::ADMIN,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Forces a replica to perform a manual failover of its master.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "flushslots",
        arity: 2,
        flags: flag::STALE | flag::ADMIN,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Deletes all slots information from a node.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "forget",
        arity: 3,
        flags: flag::STALE | flag::ADMIN,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Removes a node from the nodes table.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "getkeysinslot",
        arity: 4,
        flags: flag::STALE,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Returns the key names in a hash slot.",
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
        summary: "Returns information about the state of a node.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "keyslot",
        arity: 3,
        flags: flag::STALE,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Returns the hash slot for a key.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "links",
        arity: 2,
        flags: flag::STALE,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Returns a list of all TCP links to and from peer nodes.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "meet",
        arity: -4,
        flags: flag::STALE | flag::ADMIN,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Forces a node to handshake with another node.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "myid",
        arity: 2,
        flags: flag::STALE,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Returns the ID of a node.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "nodes",
        arity: 2,
        flags: flag::STALE,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Returns the cluster configuration for a node.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "replicas",
        arity: 3,
        flags: flag::STALE | flag::ADMIN,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Lists the replica nodes of a master node.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "replicate",
        arity: 3,
        flags: flag::STALE | flag::ADMIN,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Configures a node as replica of a master node.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "reset",
        arity: -2,
        flags: flag::STALE | flag::ADMIN | flag::NOSCRIPT,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Resets a node.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "saveconfig",
        arity: 2,
        flags: flag::STALE | flag::ADMIN,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Forces a node to save the cluster configuration to disk.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "set-config-epoch",
        arity: 3,
        flags: flag::STALE | flag::ADMIN,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Sets the configuration epoch for a new node.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "setslot",
        arity: -4,
        flags: flag::STALE | flag::ADMIN,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Binds a hash slot to a node.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "shards",
        arity: 2,
        flags: flag::STALE,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Returns the mapping of cluster slots to shards.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "slaves",
        arity: 3,
        flags: flag::STALE | flag::ADMIN,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Lists the replica nodes of a master node.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "slots",
        arity: 2,
        flags: flag::STALE,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Returns the mapping of cluster slots to nodes.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
];

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "cluster",
        arity: -2,
        group: Group::Cluster,
        since: "3.0.0",
        summary: "A container for Redis Cluster commands.",
        complexity: "Depends on subcommand.",
        subcommands: CLUSTER_SUBCOMMANDS,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "readonly",
        arity: 1,
        flags: flag::FAST | flag::LOADING | flag::STALE,
        acl: &["connection"],
        group: Group::Cluster,
        since: "3.0.0",
        summary: "Enables read-only queries for a connection to a Redis Cluster replica node.",
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
        summary: "Enables read-write queries for a connection to a Redis Cluster replica node.",
        handler: cluster_disabled,
        ..CommandSpec::DEFAULT
    },
];
