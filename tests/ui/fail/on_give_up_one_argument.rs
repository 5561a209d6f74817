use retry_runtime::{retry, Stopped};

fn report(stopped: &Stopped) {
    eprintln!("gave up: {stopped}");
}

#[retry(max = 3, on_give_up = report)]
async fn f() -> Result<u16, std::io::Error> { Ok(200) }

fn main() {}
