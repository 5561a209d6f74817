use retry_runtime::retry;

fn main() {
    // Attributes on expressions are unstable, and the compiler says so; the
    // attribute's own error says what to write instead, and nothing else.
    let fetch = #[retry(max = 3)] || -> Result<u32, ()> { Ok(1) };
    let _ = fetch();
}
