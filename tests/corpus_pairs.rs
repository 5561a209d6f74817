//! Corpus: every key against every other key it can meet, on an async fn
//! (checked `Send`) and a plain fn (except with `hedge`, async-only). Each
//! pair retries a dependency that fails once: two calls, the second's answer.
//! Left out because the attribute refuses them by design: `policy` beside
//! the keys it sets at run time (`max`, `base`, `cap`, `multiplier`,
//! `jitter`, `deadline`, `timeout`, `nested`); with `policy`, `timed_out`
//! stands without `timeout`. The `_ok` hooks come with `on_ok`, `timed_out`
//! with `timeout`, `circuit_open` with `breaker`.
#![deny(warnings, clippy::pedantic)]

include!("corpus/matrix_prelude.rs");

macro_rules! pair_async {
    ($name:ident, [$($key:tt)*] $(, $extra:item)*) => {
        mod $name {
            use super::{assert_send, Dep, Fail};
            use retry_runtime::retry;
            #[allow(unused_imports)]
            use super::{BREAKER, BUDGET, POLICY};

            #[retry($($key)*)]
            async fn run(dep: &Dep) -> Result<u32, Fail> {
                dep.call()
            }

            #[tokio::test(start_paused = true)]
            async fn meets() {
                let dep = Dep::default();
                let future = run(&dep);
                assert_send(&future);
                assert_eq!((future.await, dep.calls()), (Ok(2), 2));
            }

            $($extra)*
        }
    };
}

macro_rules! pair {
    ($name:ident, [$($key:tt)*]) => {
        pair_async!($name, [$($key)*],
            #[retry($($key)*)]
            fn run_blocking(dep: &impl super::Call) -> Result<u32, Fail> {
                dep.call()
            },
            #[test]
            fn meets_blocking() {
                let dep = Dep::default();
                assert_eq!((run_blocking(&dep), dep.calls()), (Ok(2), 2));
            }
        );
    };
}

/// `pairs! { pair name [keys]; pair_async name [keys]; .. }`
macro_rules! pairs {
    ($($macro:ident $name:ident [$($key:tt)*];)*) => {
        $($macro!($name, [$($key)*]);)*
    };
}

pairs! {
    pair max_x_base [max = 3, base = "2ms"];
    pair max_x_cap [max = 3, cap = "5ms", base = "1ms"];
    pair max_x_multiplier [max = 3, multiplier = 3, base = "1ms"];
    pair max_x_jitter [max = 3, jitter = "equal", base = "1ms"];
    pair max_x_deadline [max = 3, deadline = "10s", base = "1ms"];
    pair max_x_on [max = 3, on = |e: &Fail| e.0 < 100, base = "1ms"];
    pair max_x_on_ok [max = 3, on_ok = |_| false, base = "1ms"];
    pair max_x_retry_after [max = 3, retry_after = |_: &Fail| None, base = "1ms"];
    pair max_x_retry_after_ok [max = 3, on_ok = |_| false, retry_after_ok = |_| None, base = "1ms"];
    pair max_x_budget [max = 3, budget = &BUDGET, base = "1ms"];
    pair max_x_on_retry [max = 3, on_retry = |_: &Fail, _, _| {}, base = "1ms"];
    pair max_x_on_retry_ok [max = 3, on_ok = |_| false, on_retry_ok = |_, _, _| {}, base = "1ms"];
    pair max_x_timeout [max = 3, timeout = "1s", base = "1ms"];
    pair max_x_timed_out [max = 3, timeout = "1s", timed_out = |_| Fail(0), base = "1ms"];
    pair max_x_breaker [max = 3, breaker = &BREAKER, base = "1ms"];
    pair max_x_circuit_open [max = 3, breaker = &BREAKER, circuit_open = |_| Fail(0), base = "1ms"];
    pair_async max_x_hedge [max = 3, hedge = "50ms", base = "1ms"];
    pair max_x_nested [max = 3, nested = "retry", base = "1ms"];
    pair max_x_on_give_up [max = 3, on_give_up = |_, _| {}, base = "1ms"];
    pair max_x_crate [max = 3, crate = "::retry_runtime", base = "1ms"];
    pair base_x_cap [base = "2ms", cap = "5ms"];
    pair base_x_multiplier [base = "2ms", multiplier = 3];
    pair base_x_jitter [base = "2ms", jitter = "equal"];
    pair base_x_deadline [base = "2ms", deadline = "10s"];
    pair base_x_on [base = "2ms", on = |e: &Fail| e.0 < 100];
    pair base_x_on_ok [base = "2ms", on_ok = |_| false];
    pair base_x_retry_after [base = "2ms", retry_after = |_: &Fail| None];
    pair base_x_retry_after_ok [base = "2ms", on_ok = |_| false, retry_after_ok = |_| None];
    pair base_x_budget [base = "2ms", budget = &BUDGET];
    pair base_x_on_retry [base = "2ms", on_retry = |_: &Fail, _, _| {}];
    pair base_x_on_retry_ok [base = "2ms", on_ok = |_| false, on_retry_ok = |_, _, _| {}];
    pair base_x_timeout [base = "2ms", timeout = "1s"];
    pair base_x_timed_out [base = "2ms", timeout = "1s", timed_out = |_| Fail(0)];
    pair base_x_breaker [base = "2ms", breaker = &BREAKER];
    pair base_x_circuit_open [base = "2ms", breaker = &BREAKER, circuit_open = |_| Fail(0)];
    pair_async base_x_hedge [base = "2ms", hedge = "50ms"];
    pair base_x_nested [base = "2ms", nested = "retry"];
    pair base_x_on_give_up [base = "2ms", on_give_up = |_, _| {}];
    pair base_x_crate [base = "2ms", crate = "::retry_runtime"];
    pair cap_x_multiplier [cap = "5ms", multiplier = 3, base = "1ms"];
    pair cap_x_jitter [cap = "5ms", jitter = "equal", base = "1ms"];
    pair cap_x_deadline [cap = "5ms", deadline = "10s", base = "1ms"];
    pair cap_x_on [cap = "5ms", on = |e: &Fail| e.0 < 100, base = "1ms"];
    pair cap_x_on_ok [cap = "5ms", on_ok = |_| false, base = "1ms"];
    pair cap_x_retry_after [cap = "5ms", retry_after = |_: &Fail| None, base = "1ms"];
    pair cap_x_retry_after_ok [cap = "5ms", on_ok = |_| false, retry_after_ok = |_| None, base = "1ms"];
    pair cap_x_budget [cap = "5ms", budget = &BUDGET, base = "1ms"];
    pair cap_x_on_retry [cap = "5ms", on_retry = |_: &Fail, _, _| {}, base = "1ms"];
    pair cap_x_on_retry_ok [cap = "5ms", on_ok = |_| false, on_retry_ok = |_, _, _| {}, base = "1ms"];
    pair cap_x_timeout [cap = "5ms", timeout = "1s", base = "1ms"];
    pair cap_x_timed_out [cap = "5ms", timeout = "1s", timed_out = |_| Fail(0), base = "1ms"];
    pair cap_x_breaker [cap = "5ms", breaker = &BREAKER, base = "1ms"];
    pair cap_x_circuit_open [cap = "5ms", breaker = &BREAKER, circuit_open = |_| Fail(0), base = "1ms"];
    pair_async cap_x_hedge [cap = "5ms", hedge = "50ms", base = "1ms"];
    pair cap_x_nested [cap = "5ms", nested = "retry", base = "1ms"];
    pair cap_x_on_give_up [cap = "5ms", on_give_up = |_, _| {}, base = "1ms"];
    pair cap_x_crate [cap = "5ms", crate = "::retry_runtime", base = "1ms"];
    pair multiplier_x_jitter [multiplier = 3, jitter = "equal", base = "1ms"];
    pair multiplier_x_deadline [multiplier = 3, deadline = "10s", base = "1ms"];
    pair multiplier_x_on [multiplier = 3, on = |e: &Fail| e.0 < 100, base = "1ms"];
    pair multiplier_x_on_ok [multiplier = 3, on_ok = |_| false, base = "1ms"];
    pair multiplier_x_retry_after [multiplier = 3, retry_after = |_: &Fail| None, base = "1ms"];
    pair multiplier_x_retry_after_ok [multiplier = 3, on_ok = |_| false, retry_after_ok = |_| None, base = "1ms"];
    pair multiplier_x_budget [multiplier = 3, budget = &BUDGET, base = "1ms"];
    pair multiplier_x_on_retry [multiplier = 3, on_retry = |_: &Fail, _, _| {}, base = "1ms"];
    pair multiplier_x_on_retry_ok [multiplier = 3, on_ok = |_| false, on_retry_ok = |_, _, _| {}, base = "1ms"];
    pair multiplier_x_timeout [multiplier = 3, timeout = "1s", base = "1ms"];
    pair multiplier_x_timed_out [multiplier = 3, timeout = "1s", timed_out = |_| Fail(0), base = "1ms"];
    pair multiplier_x_breaker [multiplier = 3, breaker = &BREAKER, base = "1ms"];
    pair multiplier_x_circuit_open [multiplier = 3, breaker = &BREAKER, circuit_open = |_| Fail(0), base = "1ms"];
    pair_async multiplier_x_hedge [multiplier = 3, hedge = "50ms", base = "1ms"];
    pair multiplier_x_nested [multiplier = 3, nested = "retry", base = "1ms"];
    pair multiplier_x_on_give_up [multiplier = 3, on_give_up = |_, _| {}, base = "1ms"];
    pair multiplier_x_crate [multiplier = 3, crate = "::retry_runtime", base = "1ms"];
    pair jitter_x_deadline [jitter = "equal", deadline = "10s", base = "1ms"];
    pair jitter_x_on [jitter = "equal", on = |e: &Fail| e.0 < 100, base = "1ms"];
    pair jitter_x_on_ok [jitter = "equal", on_ok = |_| false, base = "1ms"];
    pair jitter_x_retry_after [jitter = "equal", retry_after = |_: &Fail| None, base = "1ms"];
    pair jitter_x_retry_after_ok [jitter = "equal", on_ok = |_| false, retry_after_ok = |_| None, base = "1ms"];
    pair jitter_x_budget [jitter = "equal", budget = &BUDGET, base = "1ms"];
    pair jitter_x_on_retry [jitter = "equal", on_retry = |_: &Fail, _, _| {}, base = "1ms"];
    pair jitter_x_on_retry_ok [jitter = "equal", on_ok = |_| false, on_retry_ok = |_, _, _| {}, base = "1ms"];
    pair jitter_x_timeout [jitter = "equal", timeout = "1s", base = "1ms"];
    pair jitter_x_timed_out [jitter = "equal", timeout = "1s", timed_out = |_| Fail(0), base = "1ms"];
    pair jitter_x_breaker [jitter = "equal", breaker = &BREAKER, base = "1ms"];
    pair jitter_x_circuit_open [jitter = "equal", breaker = &BREAKER, circuit_open = |_| Fail(0), base = "1ms"];
    pair_async jitter_x_hedge [jitter = "equal", hedge = "50ms", base = "1ms"];
    pair jitter_x_nested [jitter = "equal", nested = "retry", base = "1ms"];
    pair jitter_x_on_give_up [jitter = "equal", on_give_up = |_, _| {}, base = "1ms"];
    pair jitter_x_crate [jitter = "equal", crate = "::retry_runtime", base = "1ms"];
    pair deadline_x_on [deadline = "10s", on = |e: &Fail| e.0 < 100, base = "1ms"];
    pair deadline_x_on_ok [deadline = "10s", on_ok = |_| false, base = "1ms"];
    pair deadline_x_retry_after [deadline = "10s", retry_after = |_: &Fail| None, base = "1ms"];
    pair deadline_x_retry_after_ok [deadline = "10s", on_ok = |_| false, retry_after_ok = |_| None, base = "1ms"];
    pair deadline_x_budget [deadline = "10s", budget = &BUDGET, base = "1ms"];
    pair deadline_x_on_retry [deadline = "10s", on_retry = |_: &Fail, _, _| {}, base = "1ms"];
    pair deadline_x_on_retry_ok [deadline = "10s", on_ok = |_| false, on_retry_ok = |_, _, _| {}, base = "1ms"];
    pair deadline_x_timeout [deadline = "10s", timeout = "1s", base = "1ms"];
    pair deadline_x_timed_out [deadline = "10s", timeout = "1s", timed_out = |_| Fail(0), base = "1ms"];
    pair deadline_x_breaker [deadline = "10s", breaker = &BREAKER, base = "1ms"];
    pair deadline_x_circuit_open [deadline = "10s", breaker = &BREAKER, circuit_open = |_| Fail(0), base = "1ms"];
    pair_async deadline_x_hedge [deadline = "10s", hedge = "50ms", base = "1ms"];
    pair deadline_x_nested [deadline = "10s", nested = "retry", base = "1ms"];
    pair deadline_x_on_give_up [deadline = "10s", on_give_up = |_, _| {}, base = "1ms"];
    pair deadline_x_crate [deadline = "10s", crate = "::retry_runtime", base = "1ms"];
    pair on_x_on_ok [on = |e: &Fail| e.0 < 100, on_ok = |_| false, base = "1ms"];
    pair on_x_retry_after [on = |e: &Fail| e.0 < 100, retry_after = |_: &Fail| None, base = "1ms"];
    pair on_x_retry_after_ok [on = |e: &Fail| e.0 < 100, on_ok = |_| false, retry_after_ok = |_| None, base = "1ms"];
    pair on_x_budget [on = |e: &Fail| e.0 < 100, budget = &BUDGET, base = "1ms"];
    pair on_x_on_retry [on = |e: &Fail| e.0 < 100, on_retry = |_: &Fail, _, _| {}, base = "1ms"];
    pair on_x_on_retry_ok [on = |e: &Fail| e.0 < 100, on_ok = |_| false, on_retry_ok = |_, _, _| {}, base = "1ms"];
    pair on_x_timeout [on = |e: &Fail| e.0 < 100, timeout = "1s", base = "1ms"];
    pair on_x_timed_out [on = |e: &Fail| e.0 < 100, timeout = "1s", timed_out = |_| Fail(0), base = "1ms"];
    pair on_x_breaker [on = |e: &Fail| e.0 < 100, breaker = &BREAKER, base = "1ms"];
    pair on_x_circuit_open [on = |e: &Fail| e.0 < 100, breaker = &BREAKER, circuit_open = |_| Fail(0), base = "1ms"];
    pair_async on_x_hedge [on = |e: &Fail| e.0 < 100, hedge = "50ms", base = "1ms"];
    pair on_x_nested [on = |e: &Fail| e.0 < 100, nested = "retry", base = "1ms"];
    pair on_x_policy [on = |e: &Fail| e.0 < 100, policy = &POLICY];
    pair on_x_on_give_up [on = |e: &Fail| e.0 < 100, on_give_up = |_, _| {}, base = "1ms"];
    pair on_x_crate [on = |e: &Fail| e.0 < 100, crate = "::retry_runtime", base = "1ms"];
    pair on_ok_x_retry_after [on_ok = |_| false, retry_after = |_: &Fail| None, base = "1ms"];
    pair on_ok_x_retry_after_ok [on_ok = |_| false, retry_after_ok = |_| None, base = "1ms"];
    pair on_ok_x_budget [on_ok = |_| false, budget = &BUDGET, base = "1ms"];
    pair on_ok_x_on_retry [on_ok = |_| false, on_retry = |_: &Fail, _, _| {}, base = "1ms"];
    pair on_ok_x_on_retry_ok [on_ok = |_| false, on_retry_ok = |_, _, _| {}, base = "1ms"];
    pair on_ok_x_timeout [on_ok = |_| false, timeout = "1s", base = "1ms"];
    pair on_ok_x_timed_out [on_ok = |_| false, timeout = "1s", timed_out = |_| Fail(0), base = "1ms"];
    pair on_ok_x_breaker [on_ok = |_| false, breaker = &BREAKER, base = "1ms"];
    pair on_ok_x_circuit_open [on_ok = |_| false, breaker = &BREAKER, circuit_open = |_| Fail(0), base = "1ms"];
    pair_async on_ok_x_hedge [on_ok = |_| false, hedge = "50ms", base = "1ms"];
    pair on_ok_x_nested [on_ok = |_| false, nested = "retry", base = "1ms"];
    pair on_ok_x_policy [on_ok = |_| false, policy = &POLICY];
    pair on_ok_x_on_give_up [on_ok = |_| false, on_give_up = |_, _| {}, base = "1ms"];
    pair on_ok_x_crate [on_ok = |_| false, crate = "::retry_runtime", base = "1ms"];
    pair retry_after_x_retry_after_ok [retry_after = |_: &Fail| None, on_ok = |_| false, retry_after_ok = |_| None, base = "1ms"];
    pair retry_after_x_budget [retry_after = |_: &Fail| None, budget = &BUDGET, base = "1ms"];
    pair retry_after_x_on_retry [retry_after = |_: &Fail| None, on_retry = |_: &Fail, _, _| {}, base = "1ms"];
    pair retry_after_x_on_retry_ok [retry_after = |_: &Fail| None, on_ok = |_| false, on_retry_ok = |_, _, _| {}, base = "1ms"];
    pair retry_after_x_timeout [retry_after = |_: &Fail| None, timeout = "1s", base = "1ms"];
    pair retry_after_x_timed_out [retry_after = |_: &Fail| None, timeout = "1s", timed_out = |_| Fail(0), base = "1ms"];
    pair retry_after_x_breaker [retry_after = |_: &Fail| None, breaker = &BREAKER, base = "1ms"];
    pair retry_after_x_circuit_open [retry_after = |_: &Fail| None, breaker = &BREAKER, circuit_open = |_| Fail(0), base = "1ms"];
    pair_async retry_after_x_hedge [retry_after = |_: &Fail| None, hedge = "50ms", base = "1ms"];
    pair retry_after_x_nested [retry_after = |_: &Fail| None, nested = "retry", base = "1ms"];
    pair retry_after_x_policy [retry_after = |_: &Fail| None, policy = &POLICY];
    pair retry_after_x_on_give_up [retry_after = |_: &Fail| None, on_give_up = |_, _| {}, base = "1ms"];
    pair retry_after_x_crate [retry_after = |_: &Fail| None, crate = "::retry_runtime", base = "1ms"];
    pair retry_after_ok_x_budget [on_ok = |_| false, retry_after_ok = |_| None, budget = &BUDGET, base = "1ms"];
    pair retry_after_ok_x_on_retry [on_ok = |_| false, retry_after_ok = |_| None, on_retry = |_: &Fail, _, _| {}, base = "1ms"];
    pair retry_after_ok_x_on_retry_ok [on_ok = |_| false, retry_after_ok = |_| None, on_retry_ok = |_, _, _| {}, base = "1ms"];
    pair retry_after_ok_x_timeout [on_ok = |_| false, retry_after_ok = |_| None, timeout = "1s", base = "1ms"];
    pair retry_after_ok_x_timed_out [on_ok = |_| false, retry_after_ok = |_| None, timeout = "1s", timed_out = |_| Fail(0), base = "1ms"];
    pair retry_after_ok_x_breaker [on_ok = |_| false, retry_after_ok = |_| None, breaker = &BREAKER, base = "1ms"];
    pair retry_after_ok_x_circuit_open [on_ok = |_| false, retry_after_ok = |_| None, breaker = &BREAKER, circuit_open = |_| Fail(0), base = "1ms"];
    pair_async retry_after_ok_x_hedge [on_ok = |_| false, retry_after_ok = |_| None, hedge = "50ms", base = "1ms"];
    pair retry_after_ok_x_nested [on_ok = |_| false, retry_after_ok = |_| None, nested = "retry", base = "1ms"];
    pair retry_after_ok_x_policy [on_ok = |_| false, retry_after_ok = |_| None, policy = &POLICY];
    pair retry_after_ok_x_on_give_up [on_ok = |_| false, retry_after_ok = |_| None, on_give_up = |_, _| {}, base = "1ms"];
    pair retry_after_ok_x_crate [on_ok = |_| false, retry_after_ok = |_| None, crate = "::retry_runtime", base = "1ms"];
    pair budget_x_on_retry [budget = &BUDGET, on_retry = |_: &Fail, _, _| {}, base = "1ms"];
    pair budget_x_on_retry_ok [budget = &BUDGET, on_ok = |_| false, on_retry_ok = |_, _, _| {}, base = "1ms"];
    pair budget_x_timeout [budget = &BUDGET, timeout = "1s", base = "1ms"];
    pair budget_x_timed_out [budget = &BUDGET, timeout = "1s", timed_out = |_| Fail(0), base = "1ms"];
    pair budget_x_breaker [budget = &BUDGET, breaker = &BREAKER, base = "1ms"];
    pair budget_x_circuit_open [budget = &BUDGET, breaker = &BREAKER, circuit_open = |_| Fail(0), base = "1ms"];
    pair_async budget_x_hedge [budget = &BUDGET, hedge = "50ms", base = "1ms"];
    pair budget_x_nested [budget = &BUDGET, nested = "retry", base = "1ms"];
    pair budget_x_policy [budget = &BUDGET, policy = &POLICY];
    pair budget_x_on_give_up [budget = &BUDGET, on_give_up = |_, _| {}, base = "1ms"];
    pair budget_x_crate [budget = &BUDGET, crate = "::retry_runtime", base = "1ms"];
    pair on_retry_x_on_retry_ok [on_retry = |_: &Fail, _, _| {}, on_ok = |_| false, on_retry_ok = |_, _, _| {}, base = "1ms"];
    pair on_retry_x_timeout [on_retry = |_: &Fail, _, _| {}, timeout = "1s", base = "1ms"];
    pair on_retry_x_timed_out [on_retry = |_: &Fail, _, _| {}, timeout = "1s", timed_out = |_| Fail(0), base = "1ms"];
    pair on_retry_x_breaker [on_retry = |_: &Fail, _, _| {}, breaker = &BREAKER, base = "1ms"];
    pair on_retry_x_circuit_open [on_retry = |_: &Fail, _, _| {}, breaker = &BREAKER, circuit_open = |_| Fail(0), base = "1ms"];
    pair_async on_retry_x_hedge [on_retry = |_: &Fail, _, _| {}, hedge = "50ms", base = "1ms"];
    pair on_retry_x_nested [on_retry = |_: &Fail, _, _| {}, nested = "retry", base = "1ms"];
    pair on_retry_x_policy [on_retry = |_: &Fail, _, _| {}, policy = &POLICY];
    pair on_retry_x_on_give_up [on_retry = |_: &Fail, _, _| {}, on_give_up = |_, _| {}, base = "1ms"];
    pair on_retry_x_crate [on_retry = |_: &Fail, _, _| {}, crate = "::retry_runtime", base = "1ms"];
    pair on_retry_ok_x_timeout [on_ok = |_| false, on_retry_ok = |_, _, _| {}, timeout = "1s", base = "1ms"];
    pair on_retry_ok_x_timed_out [on_ok = |_| false, on_retry_ok = |_, _, _| {}, timeout = "1s", timed_out = |_| Fail(0), base = "1ms"];
    pair on_retry_ok_x_breaker [on_ok = |_| false, on_retry_ok = |_, _, _| {}, breaker = &BREAKER, base = "1ms"];
    pair on_retry_ok_x_circuit_open [on_ok = |_| false, on_retry_ok = |_, _, _| {}, breaker = &BREAKER, circuit_open = |_| Fail(0), base = "1ms"];
    pair_async on_retry_ok_x_hedge [on_ok = |_| false, on_retry_ok = |_, _, _| {}, hedge = "50ms", base = "1ms"];
    pair on_retry_ok_x_nested [on_ok = |_| false, on_retry_ok = |_, _, _| {}, nested = "retry", base = "1ms"];
    pair on_retry_ok_x_policy [on_ok = |_| false, on_retry_ok = |_, _, _| {}, policy = &POLICY];
    pair on_retry_ok_x_on_give_up [on_ok = |_| false, on_retry_ok = |_, _, _| {}, on_give_up = |_, _| {}, base = "1ms"];
    pair on_retry_ok_x_crate [on_ok = |_| false, on_retry_ok = |_, _, _| {}, crate = "::retry_runtime", base = "1ms"];
    pair timeout_x_timed_out [timeout = "1s", timed_out = |_| Fail(0), base = "1ms"];
    pair timeout_x_breaker [timeout = "1s", breaker = &BREAKER, base = "1ms"];
    pair timeout_x_circuit_open [timeout = "1s", breaker = &BREAKER, circuit_open = |_| Fail(0), base = "1ms"];
    pair_async timeout_x_hedge [timeout = "1s", hedge = "50ms", base = "1ms"];
    pair timeout_x_nested [timeout = "1s", nested = "retry", base = "1ms"];
    pair timeout_x_on_give_up [timeout = "1s", on_give_up = |_, _| {}, base = "1ms"];
    pair timeout_x_crate [timeout = "1s", crate = "::retry_runtime", base = "1ms"];
    pair timed_out_x_breaker [timeout = "1s", timed_out = |_| Fail(0), breaker = &BREAKER, base = "1ms"];
    pair timed_out_x_circuit_open [timeout = "1s", timed_out = |_| Fail(0), breaker = &BREAKER, circuit_open = |_| Fail(0), base = "1ms"];
    pair_async timed_out_x_hedge [timeout = "1s", timed_out = |_| Fail(0), hedge = "50ms", base = "1ms"];
    pair timed_out_x_nested [timeout = "1s", timed_out = |_| Fail(0), nested = "retry", base = "1ms"];
    pair timed_out_x_policy [timed_out = |_| Fail(0), policy = &POLICY];
    pair timed_out_x_on_give_up [timeout = "1s", timed_out = |_| Fail(0), on_give_up = |_, _| {}, base = "1ms"];
    pair timed_out_x_crate [timeout = "1s", timed_out = |_| Fail(0), crate = "::retry_runtime", base = "1ms"];
    pair breaker_x_circuit_open [breaker = &BREAKER, circuit_open = |_| Fail(0), base = "1ms"];
    pair_async breaker_x_hedge [breaker = &BREAKER, hedge = "50ms", base = "1ms"];
    pair breaker_x_nested [breaker = &BREAKER, nested = "retry", base = "1ms"];
    pair breaker_x_policy [breaker = &BREAKER, policy = &POLICY];
    pair breaker_x_on_give_up [breaker = &BREAKER, on_give_up = |_, _| {}, base = "1ms"];
    pair breaker_x_crate [breaker = &BREAKER, crate = "::retry_runtime", base = "1ms"];
    pair_async circuit_open_x_hedge [breaker = &BREAKER, circuit_open = |_| Fail(0), hedge = "50ms", base = "1ms"];
    pair circuit_open_x_nested [breaker = &BREAKER, circuit_open = |_| Fail(0), nested = "retry", base = "1ms"];
    pair circuit_open_x_policy [breaker = &BREAKER, circuit_open = |_| Fail(0), policy = &POLICY];
    pair circuit_open_x_on_give_up [breaker = &BREAKER, circuit_open = |_| Fail(0), on_give_up = |_, _| {}, base = "1ms"];
    pair circuit_open_x_crate [breaker = &BREAKER, circuit_open = |_| Fail(0), crate = "::retry_runtime", base = "1ms"];
    pair_async hedge_x_nested [hedge = "50ms", nested = "retry", base = "1ms"];
    pair_async hedge_x_policy [hedge = "50ms", policy = &POLICY];
    pair_async hedge_x_on_give_up [hedge = "50ms", on_give_up = |_, _| {}, base = "1ms"];
    pair_async hedge_x_crate [hedge = "50ms", crate = "::retry_runtime", base = "1ms"];
    pair nested_x_on_give_up [nested = "retry", on_give_up = |_, _| {}, base = "1ms"];
    pair nested_x_crate [nested = "retry", crate = "::retry_runtime", base = "1ms"];
    pair policy_x_on_give_up [policy = &POLICY, on_give_up = |_, _| {}];
    pair policy_x_crate [policy = &POLICY, crate = "::retry_runtime"];
    pair on_give_up_x_crate [on_give_up = |_, _| {}, crate = "::retry_runtime", base = "1ms"];
}
