#!/usr/bin/env bash
# What `#[retry]` costs in a user's build: generates one crate of N retried
# functions three ways (no retry, a hand-written loop, the attribute), builds
# each in release mode and reports the added compile time and binary size
# over the crate without retries, medians of RUNS builds.
#
# The added binary size is also split in two: what each further function
# adds, from a second build of each crate with 2N functions (the slope,
# (size(2N) - size(N)) / N), and what is added once, whatever the number of
# functions (the runtime or `rand` linked in: the rest). The target of
# issue 30 is on the first: a retried function adds at most 1.1x what a
# hand-written loop adds.
#
#   benches/build-cost.sh [N=60] [RUNS=3]
#
# Dependencies (tokio, rand, the runtime) are built once first; each timed
# build recompiles only the generated crate, as an edit in a user's crate
# would. The crates live in a workspace of their own under $WORK (default
# target/build-cost), with their own target directory there.
set -euo pipefail

N=${1:-60}
RUNS=${2:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$ROOT/target/build-cost}
mkdir -p "$WORK"
cp "$ROOT/Cargo.lock" "$WORK/Cargo.lock"

cat > "$WORK/Cargo.toml" <<TOML
[workspace]
members = ["none", "hand", "attr", "none2", "hand2", "attr2"]
resolver = "2"

[workspace.dependencies]
tokio = { version = "1", features = ["rt", "time"] }
rand = { version = "0.9", default-features = false, features = ["thread_rng"] }
retry-runtime = { path = "$ROOT/retry-runtime" }

[profile.release]
debug = false
TOML

# The dependency each function calls: cheap, not inlined, fails now and then.
common() {
  cat <<'RS'
#[derive(Debug)]
pub struct Failure(pub bool);

pub fn is_transient(error: &Failure) -> bool {
    error.0
}

pub struct Dependency(pub std::sync::atomic::AtomicU64);

impl Dependency {
    #[inline(never)]
    pub async fn call(&self, x: u64) -> Result<u64, Failure> {
        let call = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if call % 7 == 3 { Err(Failure(true)) } else { Ok(x ^ call) }
    }
}
RS
}

main_fn() {
  local n=$1
  echo 'fn main() {'
  echo '    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();'
  echo '    let dependency = Dependency(std::sync::atomic::AtomicU64::new(0));'
  echo '    rt.block_on(async {'
  echo '        let mut sum = 0u64;'
  for i in $(seq 1 "$n"); do
    echo "        sum = sum.wrapping_add(f$i(&dependency, $i).await.unwrap_or(0));"
  done
  echo '        println!("{sum}");'
  echo '    });'
  echo '}'
}

# generate VARIANT [FUNCTIONS] [PACKAGE]
generate() {
  local variant=$1 n=${2:-$N} package=${3:-$1}
  local dir="$WORK/$package"
  mkdir -p "$dir/src"
  {
    echo '[package]'
    echo "name = \"$package\""
    echo 'version = "0.0.0"'
    echo 'edition = "2021"'
    echo 'publish = false'
    echo '[dependencies]'
    echo 'tokio.workspace = true'
    [ "$variant" = hand ] && echo 'rand.workspace = true'
    [ "$variant" = attr ] && echo 'retry-runtime.workspace = true'
  } > "$dir/Cargo.toml"
  {
    common
    [ "$variant" = attr ] && echo 'use retry_runtime::retry;'
    for i in $(seq 1 "$n"); do
      case $variant in
        none)
          echo "pub async fn f$i(dependency: &Dependency, x: u64) -> Result<u64, Failure> {"
          echo "    dependency.call(x.wrapping_mul($i)).await"
          echo '}' ;;
        hand)
          # Capped exponential backoff with full jitter, as written by hand.
          echo "pub async fn f$i(dependency: &Dependency, x: u64) -> Result<u64, Failure> {"
          echo '    let mut attempt = 1u32;'
          echo '    loop {'
          echo "        match dependency.call(x.wrapping_mul($i)).await {"
          echo '            Err(error) if attempt < 4 && is_transient(&error) => {'
          echo '                let ceiling = (std::time::Duration::from_millis(100) * 2u32.pow(attempt - 1)).min(std::time::Duration::from_secs(10));'
          echo '                let wait = ceiling.mul_f64(rand::random::<f64>());'
          echo '                attempt += 1;'
          echo '                tokio::time::sleep(wait).await;'
          echo '            }'
          echo '            outcome => return outcome,'
          echo '        }'
          echo '    }'
          echo '}' ;;
        attr)
          echo '#[retry(max = 4, base = "100ms", cap = "10s", on = is_transient)]'
          echo "pub async fn f$i(dependency: &Dependency, x: u64) -> Result<u64, Failure> {"
          echo "    dependency.call(x.wrapping_mul($i)).await"
          echo '}' ;;
      esac
    done
    main_fn "$n"
  } > "$dir/src/main.rs"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

for variant in none hand attr; do
  generate "$variant"
  generate "$variant" $((2 * N)) "${variant}2"
done
(cd "$WORK" && cargo build --release --quiet --workspace)

# Wall time swings with whatever else the machine runs; CPU time (user +
# system, the compiler's threads summed) much less, so both are reported and
# the ratios use CPU time.
declare -A wall cpu bytes
for variant in none hand attr; do
  walls=() cpus=()
  for _ in $(seq 1 "$RUNS"); do
    touch "$WORK/$variant/src/main.rs"
    (cd "$WORK" && /usr/bin/time -f '%e %U %S' -o "$WORK/time.txt" cargo build --release --quiet -p "$variant")
    read -r e u s < "$WORK/time.txt"
    walls+=("$e")
    cpus+=("$(echo "$u + $s" | bc)")
  done
  wall[$variant]=$(printf '%s\n' "${walls[@]}" | median)
  cpu[$variant]=$(printf '%s\n' "${cpus[@]}" | median)
  bytes[$variant]=$(stat -c %s "$WORK/target/release/$variant")
done

echo "$N functions, release, median of $RUNS builds of the crate alone (dependencies prebuilt)"
echo
echo "| crate | build, wall | build, CPU | binary | added CPU per function | added binary per function |"
echo "|---|---|---|---|---|---|"
for variant in none hand attr; do
  added_cpu=$(echo "${cpu[$variant]} - ${cpu[none]}" | bc -l)
  added_b=$((bytes[$variant] - bytes[none]))
  printf '| %s | %.2f s | %.2f s | %d B | %.1f ms | %.0f B |\n' "$variant" "${wall[$variant]}" "${cpu[$variant]}" \
    "${bytes[$variant]}" "$(echo "$added_cpu * 1000 / $N" | bc -l)" "$(echo "$added_b / $N" | bc -l)"
done
hand_cpu=$(echo "${cpu[hand]} - ${cpu[none]}" | bc -l)
attr_cpu=$(echo "${cpu[attr]} - ${cpu[none]}" | bc -l)
hand_wall=$(echo "${wall[hand]} - ${wall[none]}" | bc -l)
attr_wall=$(echo "${wall[attr]} - ${wall[none]}" | bc -l)
echo
printf 'attribute / hand-written loop: added build CPU time %.2fx (wall %.2fx), binary %.2fx (added bytes %.2fx)\n' \
  "$(echo "$attr_cpu / $hand_cpu" | bc -l)" \
  "$(echo "$attr_wall / $hand_wall" | bc -l)" \
  "$(echo "${bytes[attr]} / ${bytes[hand]}" | bc -l)" \
  "$(echo "(${bytes[attr]} - ${bytes[none]}) / (${bytes[hand]} - ${bytes[none]})" | bc -l)"

# What each further function adds: the slope between N and 2N functions.
declare -A slope
for variant in none hand attr; do
  bytes2=$(stat -c %s "$WORK/target/release/${variant}2")
  slope[$variant]=$(( (bytes2 - bytes[$variant]) / N ))
done
hand_slope=$((slope[hand] - slope[none]))
attr_slope=$((slope[attr] - slope[none]))
echo
echo "Binary size split: each further function (slope from $N to $((2 * N)) functions, over the crate without retries), and once (the rest of what $N functions add)"
echo
echo "| crate | added per further function | added once |"
echo "|---|---|---|"
for variant in hand attr; do
  per=$((slope[$variant] - slope[none]))
  once=$(( bytes[$variant] - bytes[none] - N * per ))
  printf '| %s | %d B | %d B |\n' "$variant" "$per" "$once"
done
printf 'attribute / hand-written loop, per further function: %.2fx\n' "$(echo "$attr_slope / $hand_slope" | bc -l)"
