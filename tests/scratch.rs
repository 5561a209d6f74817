use retry_runtime::retry;
use std::io;

#[derive(Debug)]
struct E;

#[retry(max = 4, base = "200ms", jitter = "none")]
async fn free(x: &str, n: &mut u32) -> Result<usize, E> {
    *n += 1;
    if *n < 3 { return Err(E); }
    Ok(x.len())
}

#[retry(on = |e| e.kind() == io::ErrorKind::TimedOut)]
async fn alias(p: impl AsRef<str>) -> io::Result<String> {
    let s = p.as_ref().parse::<u32>().map_err(|_| io::Error::new(io::ErrorKind::Other, "x"))?;
    Ok(s.to_string())
}

struct S { v: Vec<u32> }
impl S {
    #[retry(max = 2)]
    async fn by_ref(&self) -> Result<&[u32], E> { Ok(&self.v) }
    #[retry(max = 2)]
    async fn by_mut(&mut self) -> Result<usize, E> { self.v.push(1); Ok(self.v.len()) }
    #[retry(max = 2)]
    async fn by_val(self) -> Result<usize, E> { Ok(self.v.len()) }
}

fn assert_send<T: Send>(_: T) {}

#[tokio::test(start_paused = true)]
async fn works() {
    let mut n = 0;
    let start = tokio::time::Instant::now();
    assert_eq!(free("abc", &mut n).await.unwrap(), 3);
    assert_eq!(start.elapsed().as_millis(), 600);
    let _ = alias("12").await;
    let mut s = S { v: vec![] };
    s.by_mut().await.unwrap();
    s.by_ref().await.unwrap();
    s.by_val().await.unwrap();
    assert_send(alias("1"));
}
