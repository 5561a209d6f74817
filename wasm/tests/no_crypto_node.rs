//! A JS host without the Web Crypto API (`globalThis.crypto`, which node
//! before 19 lacks): keys and jitter come from the crate's fallback, which
//! must still differ between two clients. `.ci/wasm` runs this twice and
//! checks that the `nokey=` and `nojitter=` lines printed differ between
//! the runs. A file of its own: it takes `crypto` away from the host for
//! every test in its process.
#![cfg(all(target_family = "wasm", target_os = "unknown"))]

use core::time::Duration;

use retry_runtime::{IdempotencyKey, Policy};
use wasm_bindgen_test::{console_log, wasm_bindgen_test};

#[wasm_bindgen_test]
fn without_the_hosts_crypto_two_clients_still_draw_different_keys_and_jitter() {
    let global = js_sys::global();
    assert_eq!(
        js_sys::Reflect::delete_property(&global, &"crypto".into()),
        Ok(true)
    );
    assert_eq!(js_sys::Reflect::has(&global, &"crypto".into()), Ok(false));
    // The jitter first: the thread's generator is seeded by the first draw.
    let policy = Policy::new().with_base(Duration::from_secs(10));
    let waits: Vec<u128> = (0..4)
        .map(|_| policy.wait(0, policy.base()).as_nanos())
        .collect();
    for wait in &waits {
        console_log!("nojitter={wait}");
    }
    let keys: Vec<IdempotencyKey> = (0..4).map(|_| IdempotencyKey::random()).collect();
    assert!(keys.windows(2).all(|pair| pair[0] != pair[1]));
    for key in &keys {
        let text = key.to_string();
        assert_eq!(&text[14..15], "4", "{text}");
        console_log!("nokey={text}");
    }
}
