use retry_runtime::retry;

// A suffix meant as a unit that is not one of the grammar's: the fix says
// so, and keeps the duration the user meant (not `"5ms"` for `5sec`).
#[retry(base = 5sec, cap = 2mins, deadline = 1d)]
async fn f() -> Result<(), ()> {
    Ok(())
}

// One that stands for no unit at all: the units are listed.
#[retry(timeout = 3w)]
async fn g() -> Result<(), ()> {
    Ok(())
}

fn main() {}
