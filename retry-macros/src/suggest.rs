//! The closest valid name to a misspelt one: a typo within a few edits, or
//! the name another retry library uses for the same thing.

/// Names other retry libraries use, mapped to ours.
const ALIASES: [(&str, &str); 31] = [
    ("hook", "on_retry"),
    ("notify", "on_retry"),
    ("config", "policy"),
    ("nesting", "nested"),
    ("attempt_timeout", "timeout"),
    ("per_attempt_timeout", "timeout"),
    ("retry_budget", "budget"),
    ("throttle", "budget"),
    ("circuit_breaker", "breaker"),
    ("circuit", "breaker"),
    ("attempts", "max"),
    ("max_attempts", "max"),
    ("tries", "max"),
    ("max_tries", "max"),
    ("delay", "base"),
    ("initial", "base"),
    ("initial_delay", "base"),
    ("initial_backoff", "base"),
    ("min_delay", "base"),
    ("max_delay", "cap"),
    ("max_backoff", "cap"),
    ("factor", "multiplier"),
    ("backoff_multiplier", "multiplier"),
    ("when", "on"),
    ("retry_if", "on"),
    ("retry_on", "on"),
    ("if", "on"),
    ("predicate", "on"),
    ("timeout_total", "deadline"),
    ("total_timeout", "deadline"),
    ("jiter", "jitter"),
];

/// The key `name` most likely stands for: an alias from another library,
/// or the closest of `keys` if it is close enough to be a typo.
pub fn key(name: &str, keys: impl IntoIterator<Item = &'static str>) -> Option<&'static str> {
    if let Some(&(_, key)) = ALIASES.iter().find(|(alias, _)| *alias == name) {
        return Some(key);
    }
    closest(name, keys)
}

/// The candidate closest to `name`, if it is close enough to be a typo.
pub fn closest(
    name: &str,
    candidates: impl IntoIterator<Item = &'static str>,
) -> Option<&'static str> {
    candidates
        .into_iter()
        .map(|candidate| (edit_distance(name, candidate), candidate))
        .filter(|&(distance, candidate)| {
            distance <= candidate.len().max(name.len()) / 3 + 1 && distance < candidate.len()
        })
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, candidate)| candidate)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}
