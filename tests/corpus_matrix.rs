//! Corpus: every key on every shape. Each module below puts one key (with
//! what it needs: `on_ok` for the `_ok` hooks, `timeout` for `timed_out`,
//! `breaker` for `circuit_open`) on an async fn, methods with `&self`,
//! `&mut self` and `self`, a generic fn, an `impl Trait` argument, an
//! `async fn` in a trait, a plain fn, a method under `#[async_trait]`, a fn
//! under `#[tracing::instrument]` and a `#[tokio::test]`; all compile under
//! `#![deny(warnings, clippy::pedantic)]`, every async one is `Send`, and each
//! retries a dependency that fails once: two calls, the second's answer.
//! `hedge` is async-only and refuses `&mut`: its module leaves those shapes out.
#![deny(warnings, clippy::pedantic)]

include!("corpus/matrix_prelude.rs");

/// The shapes every key is put on, async ones only.
macro_rules! async_shapes {
    ($name:ident, [$($key:tt)*] $(, $extra:item)*) => {
        mod $name {
            use super::{assert_send, Call, Dep, Fail};
            use retry_runtime::retry;
            #[allow(unused_imports)]
            use super::{BREAKER, BUDGET, POLICY};
            use std::sync::atomic::AtomicU32;

            #[retry($($key)*)]
            async fn free(dep: &Dep) -> Result<u32, Fail> {
                dep.call()
            }

            #[derive(Default)]
            struct Client {
                dep: Dep,
            }

            impl Client {
                #[retry($($key)*)]
                async fn by_ref(&self) -> Result<u32, Fail> {
                    self.dep.call()
                }

                #[retry($($key)*)]
                async fn by_value(self) -> Result<u32, Fail> {
                    self.dep.call()
                }
            }

            #[retry($($key)*)]
            async fn generic<D: Call + Sync>(dep: &D) -> Result<u32, Fail> {
                dep.call()
            }

            #[retry($($key)*)]
            async fn opaque(dep: &(impl Call + Sync)) -> Result<u32, Fail> {
                dep.call()
            }

            trait Repo {
                async fn get(&self) -> Result<u32, Fail>;
            }

            impl Repo for Client {
                #[retry($($key)*)]
                async fn get(&self) -> Result<u32, Fail> {
                    self.dep.call()
                }
            }

            #[async_trait::async_trait]
            trait Store {
                async fn load(&self) -> Result<u32, Fail>;
            }

            #[async_trait::async_trait]
            impl Store for Client {
                #[retry($($key)*)]
                async fn load(&self) -> Result<u32, Fail> {
                    self.dep.call()
                }
            }

            #[tracing::instrument(skip(dep))]
            #[retry($($key)*)]
            async fn instrumented(dep: &Dep) -> Result<u32, Fail> {
                dep.call()
            }

            static TEST_DEP: Dep = Dep(AtomicU32::new(0));

            /// Passes only if retried: its first attempt fails. (`|_|` over the
            /// `()` the `_ok` keys see here is the user's `ignored_unit_patterns`.)
            #[allow(clippy::ignored_unit_patterns)]
            #[retry($($key)*)]
            #[tokio::test(start_paused = true)]
            async fn retried_test() -> Result<(), Fail> {
                TEST_DEP.call().map(drop)
            }

            #[tokio::test(start_paused = true)]
            async fn async_shapes_retry_once() {
                let dep = Dep::default();
                let future = free(&dep);
                assert_send(&future);
                assert_eq!((future.await, dep.calls()), (Ok(2), 2));

                let client = Client::default();
                let future = client.by_ref();
                assert_send(&future);
                assert_eq!((future.await, client.dep.calls()), (Ok(2), 2));

                let future = Client::default().by_value();
                assert_send(&future);
                assert_eq!(future.await, Ok(2));

                let dep = Dep::default();
                let future = generic(&dep);
                assert_send(&future);
                assert_eq!((future.await, dep.calls()), (Ok(2), 2));

                let dep = Dep::default();
                let future = opaque(&dep);
                assert_send(&future);
                assert_eq!((future.await, dep.calls()), (Ok(2), 2));

                let client = Client::default();
                let future = Repo::get(&client);
                assert_send(&future);
                assert_eq!((future.await, client.dep.calls()), (Ok(2), 2));

                let client = Client::default();
                let future = Store::load(&client);
                assert_send(&future);
                assert_eq!((future.await, client.dep.calls()), (Ok(2), 2));

                let dep = Dep::default();
                let future = instrumented(&dep);
                assert_send(&future);
                assert_eq!((future.await, dep.calls()), (Ok(2), 2));
            }

            $($extra)*
        }
    };
}

/// Every shape: the async ones, plus `&mut self` and a plain fn.
macro_rules! all_shapes {
    ($name:ident, [$($key:tt)*]) => {
        async_shapes!($name, [$($key)*],
            impl Client {
                #[retry($($key)*)]
                async fn by_mut(&mut self) -> Result<u32, Fail> {
                    self.dep.call()
                }

                #[retry($($key)*)]
                fn plain(&self) -> Result<u32, Fail> {
                    self.dep.call()
                }
            },
            #[tokio::test(start_paused = true)]
            async fn mut_self_retries_once() {
                let mut client = Client::default();
                let future = client.by_mut();
                assert_send(&future);
                assert_eq!(future.await, Ok(2));
                assert_eq!(client.dep.calls(), 2);
            },
            #[test]
            fn plain_fn_retries_once() {
                let client = Client::default();
                assert_eq!((client.plain(), client.dep.calls()), (Ok(2), 2));
            }
        );
    };
}

all_shapes!(key_max, [max = 3, base = "1ms"]);
all_shapes!(key_base, [base = "2ms"]);
all_shapes!(key_cap, [cap = "5ms", base = "1ms"]);
all_shapes!(key_multiplier, [multiplier = 3, base = "1ms"]);
all_shapes!(key_jitter, [jitter = "equal", base = "1ms"]);
all_shapes!(key_deadline, [deadline = "10s", base = "1ms"]);
all_shapes!(key_on, [on = |e: &Fail| e.0 < 100, base = "1ms"]);
all_shapes!(key_on_ok, [on_ok = |_| false, base = "1ms"]);
all_shapes!(
    key_retry_after,
    [retry_after = |_: &Fail| None, base = "1ms"]
);
all_shapes!(
    key_retry_after_ok,
    [on_ok = |_| false, retry_after_ok = |_| None, base = "1ms"]
);
all_shapes!(key_budget, [budget = &BUDGET, base = "1ms"]);
all_shapes!(key_on_retry, [on_retry = |_: &Fail, _, _| {}, base = "1ms"]);
all_shapes!(
    key_on_retry_ok,
    [on_ok = |_| false, on_retry_ok = |_, _, _| {}, base = "1ms"]
);
all_shapes!(key_timeout, [timeout = "1s", base = "1ms"]);
all_shapes!(
    key_timed_out,
    [timeout = "1s", timed_out = |_| Fail(0), base = "1ms"]
);
all_shapes!(key_breaker, [breaker = &BREAKER, base = "1ms"]);
all_shapes!(
    key_circuit_open,
    [breaker = &BREAKER, circuit_open = |_| Fail(0), base = "1ms"]
);
async_shapes!(key_hedge, [hedge = "50ms", base = "1ms"]);
all_shapes!(key_nested, [nested = "retry", base = "1ms"]);
all_shapes!(key_policy, [policy = &POLICY]);
all_shapes!(key_on_give_up, [on_give_up = |_, _| {}, base = "1ms"]);
all_shapes!(key_crate, [crate = "::retry_runtime", base = "1ms"]);
