//! `Session`: one client of an embedded [`Store`], kept across calls.
//!
//! A session is what a connection to goblin-server is, without the
//! socket: an engine session with its own selected database, MULTI queue,
//! WATCHed keys, protocol (RESP2 or RESP3, switched with HELLO), name,
//! tracking mode and subscriptions. Its commands take the same path as a
//! connection's.
//!
//! What the engine sends a client out of band (Pub/Sub messages, client
//! side caching's invalidations) is kept apart from the replies: a call
//! returns its command's reply only, and [`Session::pushes`] streams the
//! rest, in the order it arrived. [`Session::messages`] streams only the
//! Pub/Sub messages.

use crate::error::Error;
use crate::store::{decode, run, Store};
use futures_core::Stream;
use goblin_engine::client::ClientInfo;
use goblin_engine::protocol::Reply;
use goblin_engine::{Flow, Session as EngineSession};
use std::collections::VecDeque;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// One client of a [`Store`], kept across calls: its database, its
/// transaction, its protocol and its subscriptions carry over from one
/// [`execute`](Session::execute) to the next, as on a connection to the
/// server.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), goblin::Error> {
/// use goblin::{Reply, Store};
///
/// let store = Store::open_in_memory();
/// let mut session = store.session();
/// session.execute(["SELECT", "3"]).await?;
/// session.execute(["SET", "k", "in db 3"]).await?;
/// session.execute(["MULTI"]).await?;
/// assert_eq!(session.execute(["INCR", "n"]).await?, Reply::Status("QUEUED".into()));
/// assert_eq!(session.execute(["EXEC"]).await?, Reply::Array(vec![Reply::Int(1)]));
/// assert_eq!(session.db(), 3);
/// // Another client starts on database 0.
/// assert_eq!(store.execute(["GET", "k"]).await?, Reply::Nil);
/// # Ok(())
/// # }
/// ```
///
/// A session is one client: its calls take `&mut self` and run one at a
/// time. Open one session per task that needs a client of its own. Like
/// the store's own calls it is an internal client of the engine: CLIENT
/// PAUSE does not hold it back, and CLIENT LIST and CLIENT KILL do not
/// show it.
pub struct Session {
    store: Store,
    /// Given back to the store's pool on drop (hence ManuallyDrop).
    inner: ManuallyDrop<EngineSession>,
    /// Out-of-band replies not yet taken by `pushes`.
    pending: VecDeque<Reply>,
    /// QUIT ran, or the session was killed.
    closed: bool,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id())
            .field("db", &self.db())
            .field("resp", &self.inner.state.resp)
            .finish_non_exhaustive()
    }
}

impl Session {
    pub(crate) fn new(store: Store, inner: EngineSession) -> Session {
        Session {
            store,
            inner: ManuallyDrop::new(inner),
            pending: VecDeque::new(),
            closed: false,
        }
    }

    /// The store this session is a client of.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The client's id, as CLIENT ID and CLIENT LIST give it.
    pub fn id(&self) -> u64 {
        self.inner.state.info.id
    }

    /// The selected database (SELECT).
    pub fn db(&self) -> i64 {
        self.inner.state.db as i64
    }

    /// The protocol version replies are written in: 3 (the default) or 2
    /// after `HELLO 2`. Replies decode the same either way, except that
    /// RESP2 has no maps, sets, doubles or pushes.
    pub fn protocol(&self) -> u8 {
        self.inner.state.resp
    }

    /// Runs one command on this client and returns its reply, decoded.
    ///
    /// Errors are as [`Store::execute`]'s. Pub/Sub messages and other
    /// pushes that arrive meanwhile are not part of the reply: they wait
    /// for [`pushes`](Session::pushes). After QUIT, or once the client
    /// was killed (CLIENT KILL), every call is [`Error::Closed`].
    ///
    /// A blocking command waits asynchronously; dropping the future while
    /// it waits gives the wait up (the next call starts with nothing
    /// pending), as a disconnect would.
    pub async fn execute<I, A>(&mut self, args: I) -> Result<Reply, Error>
    where
        I: IntoIterator<Item = A>,
        A: AsRef<[u8]>,
    {
        let args: Vec<A> = args.into_iter().collect();
        let reply = self.exchange(&args).await?;
        decode(&reply)
    }

    /// Runs one command and returns the bytes of its reply (several
    /// replies for a command that writes several), as the protocol wrote
    /// them; pushes that came with them go to the pending queue.
    pub(crate) async fn exchange<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<Vec<u8>, Error> {
        self.check_open()?;
        // A wait whose future was dropped is given up, and what it or an
        // earlier call left behind is not this call's reply.
        self.inner.cancel_block();
        self.take_pushes();
        let subscribed = self.inner.state.subscribed();
        let flow = run(&mut self.inner, args).await?;
        if flow == Flow::Close || self.inner.state.info.is_killed() {
            self.closed = true;
        }
        let out = std::mem::take(&mut self.inner.out.buf);
        let reply = self.split_pushes(&out, subscribed);
        self.inner.out.buf = out;
        self.inner.out.buf.clear();
        if reply.is_empty() {
            return Err(if self.closed {
                Error::Closed
            } else {
                Error::NoReply
            });
        }
        Ok(reply)
    }

    fn check_open(&mut self) -> Result<(), Error> {
        if self.inner.state.info.is_killed() {
            self.closed = true;
        }
        if self.closed {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// Moves what other clients sent this one since the last look into
    /// the pending queue. Anything else in the output is the reply of a
    /// call whose future was dropped before it returned: nobody reads it.
    fn take_pushes(&mut self) {
        if self.inner.deliver_pushes() || !self.inner.out.buf.is_empty() {
            let subscribed = self.inner.state.subscribed();
            let out = std::mem::take(&mut self.inner.out.buf);
            if let Ok(replies) = Reply::decode_all(&out) {
                self.pending.extend(
                    replies
                        .into_iter()
                        .filter(|r| matches!(r, Reply::Push(_)) || is_out_of_band(r, subscribed)),
                );
            }
            self.inner.out.buf = out;
            self.inner.out.buf.clear();
        }
    }

    /// The bytes of `out` that are the command's reply; the out-of-band
    /// replies in it (RESP3 pushes of messages and invalidations, or a
    /// subscribed RESP2 client's message arrays) go to the pending queue.
    fn split_pushes(&mut self, out: &[u8], was_subscribed: bool) -> Vec<u8> {
        let mut reply = Vec::with_capacity(out.len());
        let mut rest = out;
        while !rest.is_empty() {
            let Ok((decoded, used)) = Reply::decode(rest) else {
                reply.extend_from_slice(rest);
                break;
            };
            let resp2_message = was_subscribed && matches!(&decoded, Reply::Array(_));
            if is_out_of_band(&decoded, resp2_message) {
                self.pending.push_back(decoded);
            } else {
                reply.extend_from_slice(&rest[..used]);
            }
            rest = &rest[used..];
        }
        reply
    }

    /// Every out-of-band reply this client receives, in order: Pub/Sub
    /// messages (`message`, `pmessage`, `smessage`), client-side caching's
    /// invalidations (`invalidate`), as [`Push`] values. The stream ends
    /// when the session is closed or killed; while the session is
    /// subscribed to nothing and tracks nothing, it simply waits.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), goblin::Error> {
    /// use futures_util::StreamExt;
    /// use goblin::{Push, Store};
    ///
    /// let store = Store::open_in_memory();
    /// let mut subscriber = store.session();
    /// subscriber.execute(["SUBSCRIBE", "news"]).await?;
    /// store.execute(["PUBLISH", "news", "hello"]).await?;
    /// match subscriber.pushes().next().await {
    ///     Some(Push::Message(m)) => assert_eq!(m.payload, b"hello"),
    ///     other => panic!("{other:?}"),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn pushes(&mut self) -> Pushes<'_> {
        let info = self.inner.state.info.clone();
        Pushes {
            session: self,
            wake: wake_future(info),
        }
    }

    /// The Pub/Sub messages this client receives (SUBSCRIBE, PSUBSCRIBE,
    /// SSUBSCRIBE), in order. Other pushes are passed over and dropped;
    /// use [`pushes`](Session::pushes) to see those too.
    pub fn messages(&mut self) -> Messages<'_> {
        Messages {
            pushes: self.pushes(),
        }
    }

    /// The next pending push, if one is already there.
    fn next_pending(&mut self) -> Option<Push> {
        self.take_pushes();
        self.pending.pop_front().map(Push::from_reply)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // A fresh session goes back to the store's pool of clients.
        // SAFETY: `inner` is not used after this, drop being the last use
        // of the session.
        let inner = unsafe { ManuallyDrop::take(&mut self.inner) };
        self.store.checkin(inner);
    }
}

/// Whether a decoded reply is something the engine sent the client out
/// of band rather than a command's reply.
fn is_out_of_band(reply: &Reply, resp2_subscribed: bool) -> bool {
    let items = match reply {
        Reply::Push(items) => items,
        Reply::Array(items) if resp2_subscribed => items,
        _ => return false,
    };
    matches!(
        items.first(),
        Some(Reply::Bulk(kind)) if matches!(
            kind.as_slice(),
            b"message" | b"pmessage" | b"smessage" | b"invalidate"
        )
    )
}

/// What the engine sent a [`Session`] out of band.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Push {
    /// A Pub/Sub message.
    Message(Message),
    /// Anything else, as the protocol carried it: client-side caching's
    /// `invalidate` push (`Reply::Push([Bulk("invalidate"), keys])`, keys
    /// being `Nil` when everything is invalidated), and any future kind.
    Other(Reply),
}

impl Push {
    fn from_reply(reply: Reply) -> Push {
        Message::from_reply(&reply)
            .map(Push::Message)
            .unwrap_or(Push::Other(reply))
    }
}

/// How a Pub/Sub message reached its subscriber.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageKind {
    /// A channel subscribed with SUBSCRIBE.
    Channel,
    /// A pattern subscribed with PSUBSCRIBE; [`Message::pattern`] is set.
    Pattern,
    /// A shard channel subscribed with SSUBSCRIBE.
    Shard,
}

/// A Pub/Sub message received by a [`Session`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// How it was subscribed.
    pub kind: MessageKind,
    /// The channel it was published on.
    pub channel: Vec<u8>,
    /// The pattern that matched the channel, for a pattern subscription.
    pub pattern: Option<Vec<u8>>,
    /// What was published.
    pub payload: Vec<u8>,
}

impl Message {
    fn from_reply(reply: &Reply) -> Option<Message> {
        let (Reply::Push(items) | Reply::Array(items)) = reply else {
            return None;
        };
        let bulk = |r: &Reply| match r {
            Reply::Bulk(b) => Some(b.clone()),
            _ => None,
        };
        match items.as_slice() {
            [Reply::Bulk(kind), channel, payload] if kind == b"message" || kind == b"smessage" => {
                Some(Message {
                    kind: if kind == b"message" {
                        MessageKind::Channel
                    } else {
                        MessageKind::Shard
                    },
                    channel: bulk(channel)?,
                    pattern: None,
                    payload: bulk(payload)?,
                })
            }
            [Reply::Bulk(kind), pattern, channel, payload] if kind == b"pmessage" => {
                Some(Message {
                    kind: MessageKind::Pattern,
                    channel: bulk(channel)?,
                    pattern: Some(bulk(pattern)?),
                    payload: bulk(payload)?,
                })
            }
            _ => None,
        }
    }
}

type WakeFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Resolves when the engine wakes the client: a push arrived, or it was
/// killed. It owns the client's info, so the stream borrows only the
/// session.
fn wake_future(info: Arc<ClientInfo>) -> WakeFuture {
    Box::pin(async move { info.wake.notified().await })
}

/// The stream of [`Session::pushes`].
pub struct Pushes<'a> {
    session: &'a mut Session,
    wake: WakeFuture,
}

impl std::fmt::Debug for Pushes<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pushes")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

impl Stream for Pushes<'_> {
    type Item = Push;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Push>> {
        let this = self.get_mut();
        loop {
            if let Some(push) = this.session.next_pending() {
                return Poll::Ready(Some(push));
            }
            if this.session.check_open().is_err() {
                return Poll::Ready(None);
            }
            // The engine stores a wake given while nobody waits, so one
            // that comes between the look above and this poll is not lost.
            match this.wake.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    this.wake = wake_future(this.session.inner.state.info.clone());
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// The stream of [`Session::messages`].
#[derive(Debug)]
pub struct Messages<'a> {
    pushes: Pushes<'a>,
}

impl Stream for Messages<'_> {
    type Item = Message;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Message>> {
        let this = self.get_mut();
        loop {
            match Pin::new(&mut this.pushes).poll_next(cx) {
                Poll::Ready(Some(Push::Message(m))) => return Poll::Ready(Some(m)),
                Poll::Ready(Some(_)) => continue,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
