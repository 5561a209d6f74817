//! The `#[retry]` attribute. Use it through `retry-runtime`, which re-exports
//! it as `retry_runtime::retry` and documents it; this crate only parses,
//! checks and expands. No retry logic lives here.
//!
//! Stages, one module each: `parse` reads the keys into typed values (the
//! one table of keys is there), `check` judges them, `signatures` judges the
//! function's shape, `suggest` finds the key a misspelt one stands for,
//! `expand` writes the loop and `rustdoc` its `# Retries` documentation. On any mistake the function is emitted unchanged
//! next to the errors, so the rest of the crate still compiles and one mistake
//! is one error.
#![forbid(unsafe_code)]

mod check;
mod expand;
mod hedge;
mod parse;
mod rustdoc;
mod signatures;
mod suggest;

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenTree};
use quote::ToTokens;

// No doc comment: rustdoc appends it to the docs of the re-export
// `retry_runtime::retry`, which documents the attribute in full.
#[proc_macro_attribute]
pub fn retry(args: TokenStream, item: TokenStream) -> TokenStream {
    retry_impl(args.into(), item.into()).into()
}

fn retry_impl(
    args: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    let function: parse::Function = match syn::parse2(item.clone()) {
        Ok(function) => function,
        // A function that does not parse: the compiler reports the syntax
        // error when it reads the item back, as it would without `#[retry]`;
        // the attribute's own mistakes are still reported.
        Err(_) if is_function(&item) => {
            let mut output = item;
            let config = parse::parse_args(args).and_then(check::config);
            if let Err(error) = config {
                output.extend(error.to_compile_error());
            }
            return output;
        }
        // A closure (`#[retry] || ..`, which needs an unstable feature
        // anyway): given back as one expression, the error inside it, so
        // that the error is ours and not one about the tokens following.
        Err(_) if is_closure(&item) => {
            let error = syn::Error::new(
                item_keyword(&item).span(),
                "`#[retry]` retries a function, not a closure: run the closure through a \
                 policy instead, such as `Policy::new().on(is_transient).run(|| get_user(7)).await` \
                 (`run_blocking` for a blocking one), or move its body into an `fn` with \
                 `#[retry]`",
            )
            .to_compile_error();
            return quote::quote!({ #error; #item });
        }
        Err(_) => {
            let keyword = item_keyword(&item);
            let message = match keyword.to_string().as_str() {
                "impl" | "trait" => {
                    "`#[retry]` retries one function: put it on each `async fn` of this block that \
                     should be retried; with `#[async_trait]`, keep `#[async_trait]` on the block \
                     and `#[retry]` on the method"
                }
                _ => {
                    "`#[retry]` can only be applied to a function (`async fn` or `fn`) that \
                     returns a `Result`"
                }
            };
            let error = syn::Error::new(keyword.span(), message);
            let mut output = item;
            output.extend(error.to_compile_error());
            return output;
        }
    };
    let config = parse::parse_args(args)
        .and_then(check::config)
        .and_then(runtime_in_reach);
    let checked = signatures::function(&function).and_then(|shape| {
        let is_async =
            function.sig.asyncness.is_some() || matches!(shape, signatures::Shape::AsyncTrait(_));
        match &config {
            Ok(config) => hedge::check(config, &function, is_async)
                .and_then(|()| check::captures(config, &function))
                .map(|()| shape),
            Err(_) => Ok(shape),
        }
    });
    match (config, checked) {
        (Ok(config), Ok(shape)) => expand::expand(function, config, shape),
        (config, checked) => {
            let mut errors = check::Errors::default();
            for error in [config.err(), checked.err()].into_iter().flatten() {
                errors.push(error);
            }
            let mut output = function.into_token_stream();
            if let Err(error) = errors.finish(()) {
                output.extend(error.to_compile_error());
            }
            output
        }
    }
}

/// Whether the item is a function, whatever follows its `fn`: past its
/// attributes and visibility, only qualifiers (`const`, `async`, `unsafe`,
/// `extern "C"`) come before `fn`.
fn is_function(item: &proc_macro2::TokenStream) -> bool {
    let mut tokens = item.clone().into_iter();
    while let Some(token) = tokens.next() {
        match &token {
            TokenTree::Punct(p) if p.as_char() == '#' => {
                tokens.next();
            }
            TokenTree::Ident(ident) if ident == "fn" => return true,
            TokenTree::Ident(ident)
                if ["pub", "const", "async", "unsafe", "extern", "default"]
                    .iter()
                    .any(|qualifier| ident == qualifier) => {}
            // `pub(crate)`, and the ABI of `extern "C"`.
            TokenTree::Group(group) if group.delimiter() == proc_macro2::Delimiter::Parenthesis => {
            }
            TokenTree::Literal(_) => {}
            _ => return false,
        }
    }
    false
}

/// Whether the item is a closure: past its attributes, `|`, `move` or
/// `async` followed by either.
fn is_closure(item: &proc_macro2::TokenStream) -> bool {
    let tokens: Vec<TokenTree> = item.clone().into_iter().collect();
    let mut at = 0;
    while matches!(tokens.get(at), Some(TokenTree::Punct(p)) if p.as_char() == '#') {
        at += 2;
    }
    let starts = |token: Option<&TokenTree>| match token {
        Some(TokenTree::Punct(p)) => p.as_char() == '|',
        Some(TokenTree::Ident(ident)) => ident == "move",
        _ => false,
    };
    match tokens.get(at) {
        Some(TokenTree::Ident(ident)) if ident == "async" => starts(tokens.get(at + 1)),
        token => starts(token),
    }
}

/// The token that says what the item is (`struct`, `impl`, ...), past its
/// attributes, visibility and qualifiers.
fn item_keyword(item: &proc_macro2::TokenStream) -> TokenTree {
    let mut tokens = item.clone().into_iter();
    let mut first = None;
    while let Some(token) = tokens.next() {
        first.get_or_insert_with(|| token.clone());
        match &token {
            TokenTree::Punct(p) if p.as_char() == '#' => {
                tokens.next();
            }
            TokenTree::Ident(ident) if ident == "pub" || ident == "unsafe" => {}
            TokenTree::Group(_) => {}
            _ => return token,
        }
    }
    first.unwrap_or_else(|| TokenTree::Ident(proc_macro2::Ident::new("item", Span::call_site())))
}

/// The config, or an error saying to write `crate = "..."` when the paths
/// the expansion names, `::retry_runtime::...`, cannot resolve: the crate
/// being compiled does not depend on `retry-runtime` under that name, as
/// when a crate it depends on re-exports the runtime. Read from the crate's
/// manifest, so that the fix is named once, before the compiler reports each
/// unresolved path.
fn runtime_in_reach(config: parse::Config) -> syn::Result<parse::Config> {
    if config.krate.is_some() {
        return Ok(config);
    }
    let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR") else {
        return Ok(config);
    };
    match std::fs::read_to_string(std::path::Path::new(&dir).join("Cargo.toml")) {
        Ok(manifest) if !names_runtime(&manifest) => Err(runtime_out_of_reach()),
        Ok(manifest) => match renamed_runtime(&manifest) {
            Some(name) => Err(runtime_renamed(&name)),
            None => Ok(config),
        },
        Err(_) => Ok(config),
    }
}

/// The name a manifest depends on `retry-runtime` under, when it renames
/// it (`retry = { package = "retry-runtime" }`, or a `[dependencies.retry]`
/// table with that `package`) and depends on it under its own name nowhere.
fn renamed_runtime(manifest: &str) -> Option<String> {
    let unquote = |key: &str| key.trim().trim_matches(['"', '\'']).to_owned();
    let is_own_name = |key: &str| key == "retry-runtime" || key == "retry_runtime";
    let mut table: Option<String> = None;
    let mut renamed = None;
    for line in manifest
        .lines()
        .map(|line| line.split('#').next().unwrap_or("").trim())
    {
        if let Some(header) = line.strip_prefix('[') {
            // `[dependencies.retry]`, `[target.'cfg(..)'.dev-dependencies.retry]`.
            let header = header.trim_end_matches(']');
            table = header
                .rsplit_once("dependencies.")
                .map(|(_, key)| unquote(key));
            if table.as_deref().is_some_and(is_own_name) {
                return None;
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = unquote(key);
        // `retry-runtime = ..`, `retry-runtime.workspace = true`.
        if is_own_name(key.split('.').next().unwrap_or("")) && table.is_none() {
            return None;
        }
        let package = value.replace(' ', "");
        let renames = package.contains("package=\"retry-runtime\"")
            || (key == "package" && package == "\"retry-runtime\"");
        if renames {
            renamed = match (value.contains('{'), &table) {
                (true, _) => Some(key),
                (false, Some(table)) => Some(table.clone()),
                (false, None) => renamed,
            };
        }
    }
    renamed.filter(|name| !is_own_name(name))
}

fn runtime_renamed(name: &str) -> syn::Error {
    let path = name.replace('-', "_");
    syn::Error::new(
        Span::call_site(),
        format!(
            "`#[retry]` expands to paths in `::retry_runtime`, and this crate depends on \
             `retry-runtime` under the name `{name}`: write `crate = \"::{path}\"`, such as \
             `#[retry(crate = \"::{path}\", max = 4)]`"
        ),
    )
}

/// Whether a manifest names `retry-runtime`, under its own name or renamed.
fn names_runtime(manifest: &str) -> bool {
    manifest.contains("retry-runtime") || manifest.contains("retry_runtime")
}

fn runtime_out_of_reach() -> syn::Error {
    syn::Error::new(
        Span::call_site(),
        "`#[retry]` expands to paths in `::retry_runtime`, and this crate does not depend on \
         `retry-runtime`: if a crate you depend on re-exports it, name it with \
         `crate = \"...\"`, such as `#[retry(crate = \"::my_facade::retry_runtime\")]`; \
         otherwise add `retry-runtime` to the dependencies in Cargo.toml",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A crate that reaches the runtime only through a facade gets one error
    /// naming `crate = "..."`, not an unresolved path per use.
    #[test]
    fn a_manifest_without_the_runtime_is_told_to_write_crate() {
        let facade = "[package]\nname = \"service\"\n[dependencies]\nmy_facade = \"1\"\n";
        assert!(!names_runtime(facade));
        assert!(runtime_out_of_reach()
            .to_string()
            .contains("crate = \"...\""));
        assert!(names_runtime("[dependencies]\nretry-runtime = \"0.1\"\n"));
        assert!(names_runtime(
            "[dependencies]\nretry = { package = \"retry-runtime\" }\n"
        ));
    }

    /// A crate that renames the runtime is told the name to write in
    /// `crate = "..."`, once, instead of an unresolved `::retry_runtime` per
    /// use.
    #[test]
    fn a_renamed_runtime_is_named() {
        let inline = "[dependencies]\nretry = { package = \"retry-runtime\", version = \"0.1\" }\n";
        assert_eq!(renamed_runtime(inline).as_deref(), Some("retry"));
        let table =
            "[dependencies.my-retry]\npath = \"../retry-runtime\"\npackage = \"retry-runtime\"\n";
        assert_eq!(renamed_runtime(table).as_deref(), Some("my-retry"));
        assert!(runtime_renamed("my-retry")
            .to_string()
            .contains("crate = \"::my_retry\""));
        // Under its own name too, or only its own name: nothing to say.
        let both = format!("{inline}retry-runtime = \"0.1\"\n");
        assert_eq!(renamed_runtime(&both), None);
        assert_eq!(
            renamed_runtime("[dependencies]\nretry-runtime = \"0.1\"\n"),
            None
        );
        assert_eq!(
            renamed_runtime("[dependencies]\nretry-runtime.workspace = true\n"),
            None
        );
        assert_eq!(
            renamed_runtime("[dev-dependencies.retry-runtime]\npath = \"..\"\n"),
            None
        );
    }
}

#[cfg(test)]
mod expansion_size {
    use quote::quote;

    /// The expansion of a one-line body (printed with `cargo test -p
    /// retry-macros --lib expansion_size -- --nocapture`) judges the outcome
    /// once: one `match`, on what the step says, and no dead branch. It
    /// matched the outcome as an `Ok` and an `Err`, judged each apart, and
    /// kept a dead `'probe` branch in each of three declarations, so that a
    /// return type that is not a `Result` stayed one error.
    #[test]
    fn a_one_line_body_is_judged_once() {
        let expanded = super::retry_impl(
            quote!(max = 4, base = "100ms", cap = "10s", on = is_transient),
            quote! {
                pub async fn f(dependency: &Dependency, x: u64) -> Result<u64, Failure> {
                    dependency.call(x).await
                }
            },
        )
        .to_string();
        println!("{expanded}");
        assert_eq!(expanded.matches("match ").count(), 1, "{expanded}");
        assert_eq!(
            expanded.matches("Attempts :: step").count(),
            1,
            "{expanded}"
        );
        assert!(!expanded.contains("'probe"), "{expanded}");
        assert!(!expanded.contains("if false { let outcome"), "{expanded}");
    }
}
