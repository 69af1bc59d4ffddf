//! Stock reservations with GOBLIN.DECRPOS and GOBLIN.DECRBYPOS through
//! `Store::execute`: many buyers at once, and never more sold than there
//! is. Runs with no server: the store is embedded.
//!
//!     cargo run --example stock

use goblin::{Reply, Store};

/// Takes one unit: the units left, or None when sold out. GOBLIN.DECRPOS
/// reads, tests and decrements in one atomic step.
async fn reserve_one(store: &Store, sku: &str) -> Result<Option<i64>, goblin::Error> {
    match store.execute(["GOBLIN.DECRPOS", sku]).await? {
        Reply::Int(-1) => Ok(None),
        Reply::Int(left) => Ok(Some(left)),
        other => panic!("unexpected reply {other:?}"),
    }
}

/// Takes `n` units, all or nothing.
async fn reserve(store: &Store, sku: &str, n: i64) -> Result<Option<i64>, goblin::Error> {
    match store
        .execute(["GOBLIN.DECRBYPOS", sku, &n.to_string()])
        .await?
    {
        Reply::Int(-1) => Ok(None),
        Reply::Int(left) => Ok(Some(left)),
        other => panic!("unexpected reply {other:?}"),
    }
}

#[tokio::main]
async fn main() -> Result<(), goblin::Error> {
    let store = Store::open_in_memory();
    store.execute(["SET", "stock:sku-42", "10"]).await?;

    // 25 buyers at once, for 10 units.
    let buyers: Vec<_> = (0..25)
        .map(|buyer| {
            let store = store.clone();
            tokio::spawn(async move { (buyer, reserve_one(&store, "stock:sku-42").await) })
        })
        .collect();
    let mut sold = 0;
    for b in buyers {
        let (buyer, outcome) = b.await.expect("buyer task");
        match outcome? {
            Some(left) => {
                sold += 1;
                println!("buyer {buyer:2}: reserved one, {left} left");
            }
            None => println!("buyer {buyer:2}: sold out"),
        }
    }
    println!("sold {sold} of 10");
    assert_eq!(sold, 10);

    store.execute(["SET", "stock:sku-7", "5"]).await?;
    for want in [2, 4, 3] {
        match reserve(&store, "stock:sku-7", want).await? {
            Some(left) => println!("reserved {want} of sku-7, {left} left"),
            None => println!("cannot reserve {want} of sku-7: not enough left"),
        }
    }
    let left = store.execute(["GET", "stock:sku-7"]).await?;
    println!("sku-7 left: {left:?}");
    Ok(())
}
