//! The cache through redis-rs's cluster connection, on a three-node Redis
//! Cluster: with Goblin's module loaded on every node (the GOBLIN.*
//! commands, routed by their key as GET is), and without it (the Lua
//! scripts, routed by their one key). The conformance kit runs on both,
//! and a key of every node is checked to live on the node of its slot.

use crate::support::cluster::Cluster;
use crate::support::goblin_support::{Conn, Reply};
use goblin::cache::{conformance, Cache, Key};

async fn start(module: bool) -> Cluster {
    tokio::task::spawn_blocking(move || Cluster::start(module))
        .await
        .unwrap()
}

/// Keys of every node went to the node that serves their slot: that node
/// has the value, and the others answer MOVED.
async fn keys_live_on_their_nodes(cluster: &Cluster, cache: &Cache) {
    let mut on = vec![0; cluster.nodes.len()];
    for i in 0..30i64 {
        let name = format!("cluster-views:{i}");
        let k = Key::<i64>::new(name.clone());
        assert_eq!(cache.increment(&k, i + 1).await.unwrap(), i + 1);
        let addrs: Vec<_> = cluster.nodes.iter().map(|n| n.addr).collect();
        let replies = tokio::task::spawn_blocking(move || {
            addrs
                .iter()
                .map(|&a| Conn::connect(a).cmd(&["GET", &name]))
                .collect::<Vec<Reply>>()
        })
        .await
        .unwrap();
        let value = Reply::Bulk((i + 1).to_string().into_bytes());
        let owners: Vec<usize> = (0..replies.len())
            .filter(|&n| replies[n] == value)
            .collect();
        assert_eq!(owners.len(), 1, "{replies:?}");
        for (n, r) in replies.iter().enumerate() {
            if n != owners[0] {
                assert!(
                    matches!(r, Reply::Error(e) if e.starts_with("MOVED")),
                    "{r:?}"
                );
            }
        }
        on[owners[0]] += 1;
    }
    assert!(on.iter().all(|&n| n > 0), "keys on every node: {on:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_kit_passes_through_a_cluster_with_the_module() {
    let cluster = start(true).await;
    let cache = Cache::connect_cluster(cluster.urls()).await.unwrap();
    let steps = format!("{cache:?}");
    assert!(
        steps.contains("incrttl: true, decrby: true"),
        "the module's commands: {steps}"
    );
    keys_live_on_their_nodes(&cluster, &cache).await;
    conformance::run_cache(&cache).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_kit_passes_through_a_cluster_with_scripts() {
    let cluster = start(false).await;
    let cache = Cache::connect_cluster(cluster.urls()).await.unwrap();
    let steps = format!("{cache:?}");
    assert!(
        steps.contains("incrttl: false, decrby: false, scripts: true"),
        "Lua on a plain Redis: {steps}"
    );
    keys_live_on_their_nodes(&cluster, &cache).await;
    conformance::run_cache(&cache).await;
}
