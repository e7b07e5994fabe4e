//! Where an object lives: its URL parsed into a store client and a key, the store configured the
//! way every client of that store is (S3: `AWS_*` variables, then the profile, then anonymous),
//! and the URL as it may be shown (no credentials, no query).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use object_store::ObjectStore;
use object_store::path::Path;
use object_store::{ClientOptions, RetryConfig};

use crate::error::{Error, ErrorKind, Result};

/// A parsed URL: the store's client (shared by every object of the same store and settings) and
/// the object's key in it.
#[derive(Clone, Debug)]
pub(crate) struct Location {
    /// The URL as shown in messages and kept in the cache's records.
    pub(crate) shown: String,
    pub(crate) store: Arc<dyn ObjectStore>,
    pub(crate) key: Path,
}

/// Whether `text` is a URL this library reads rather than a local path.
pub fn is_url(text: &str) -> bool {
    ["s3://", "s3a://", "gs://", "az://", "http://", "https://"].iter().any(|s| text.starts_with(s))
}

/// The URL as shown: scheme, host or bucket, path; no user, password or query (a presigned
/// URL's signature is a credential).
pub fn shown(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => {
            let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
            format!("{}://{}{port}{}", u.scheme(), u.host_str().unwrap_or(""), u.path())
        }
        Err(_) => url.split(['?', '#']).next().unwrap_or(url).to_owned(),
    }
}

impl Location {
    /// Parses `url` and finds (or makes) its store's client.
    pub(crate) fn parse(url: &str) -> Result<Location> {
        let shown = shown(url);
        let bad = |why: &str| Error::new(ErrorKind::BadUrl, &shown, why.to_owned());
        let u = url::Url::parse(url).map_err(|e| bad(&format!("not a URL ({e})")))?;
        if !u.username().is_empty() || u.password().is_some() {
            return Err(bad("credentials in a URL are not taken: give them as the store's client takes them"));
        }
        if u.query().is_some() {
            // A presigned URL's signature is in its query, which the stores' clients would drop.
            return Err(bad("a query string (a presigned URL) is not taken"));
        }
        let host = u.host_str().filter(|h| !h.is_empty()).ok_or_else(|| bad("no bucket or host"))?;
        let key = Path::from_url_path(u.path()).map_err(|e| bad(&format!("not an object key ({e})")))?;
        let scheme = u.scheme();
        let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
        let root = format!("{scheme}://{host}{port}");
        let store = client(&root, || build(scheme, host, &root)).map_err(|why| bad(&why))?;
        Ok(Location { shown, store, key })
    }
}

/// The client of `root` under the current settings, made once.
fn client(
    root: &str,
    make: impl FnOnce() -> std::result::Result<Arc<dyn ObjectStore>, String>,
) -> std::result::Result<Arc<dyn ObjectStore>, String> {
    static CLIENTS: OnceLock<Mutex<HashMap<String, Arc<dyn ObjectStore>>>> = OnceLock::new();
    // The settings are part of the key: a test, or a program, may point the same bucket name at
    // another endpoint or other credentials between two opens. So is the process: a child after
    // `fork` makes clients of its own (a client's connections belong to its runtime).
    let key = format!("{root}\n{}\n{}", std::process::id(), settings_fingerprint());
    let clients = CLIENTS.get_or_init(Default::default);
    if let Some(found) = clients.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return Ok(Arc::clone(found));
    }
    let made = make()?;
    clients.lock().unwrap_or_else(|p| p.into_inner()).insert(key, Arc::clone(&made));
    Ok(made)
}

/// The environment's store settings, as one string (compared, never shown).
fn settings_fingerprint() -> String {
    let mut vars: Vec<(String, String)> =
        std::env::vars().filter(|(k, _)| ["AWS_", "GOOGLE_", "AZURE_"].iter().any(|p| k.starts_with(p))).collect();
    vars.sort();
    vars.into_iter().map(|(k, v)| format!("{k}={v}\n")).collect()
}

/// How long requests may take and how often a failed one is tried again: a refused connection
/// or a dead server gives an error in seconds, not minutes.
fn retry() -> RetryConfig {
    RetryConfig { max_retries: 3, retry_timeout: Duration::from_secs(20), ..RetryConfig::default() }
}

fn options(allow_http: bool) -> ClientOptions {
    ClientOptions::new()
        .with_allow_http(allow_http)
        .with_connect_timeout(Duration::from_secs(5))
        .with_timeout(Duration::from_secs(120))
}

fn build(scheme: &str, host: &str, root: &str) -> std::result::Result<Arc<dyn ObjectStore>, String> {
    let store: Arc<dyn ObjectStore> = match scheme {
        "s3" | "s3a" => Arc::new(s3(host)?),
        "gs" => {
            let b = object_store::gcp::GoogleCloudStorageBuilder::from_env().with_bucket_name(host);
            Arc::new(b.with_retry(retry()).with_client_options(options(false)).build().map_err(|e| e.to_string())?)
        }
        "az" => {
            let b = object_store::azure::MicrosoftAzureBuilder::from_env().with_container_name(host);
            Arc::new(b.with_retry(retry()).with_client_options(options(false)).build().map_err(|e| e.to_string())?)
        }
        "http" | "https" => {
            let b = object_store::http::HttpBuilder::new().with_url(root);
            let b = b.with_retry(retry()).with_client_options(options(scheme == "http"));
            Arc::new(b.build().map_err(|e| e.to_string())?)
        }
        other => return Err(format!("scheme {other:?}: use s3://, gs://, az://, http:// or https://")),
    };
    Ok(store)
}

/// S3 (and every store that speaks its API): the `AWS_*` variables as every S3 client reads
/// them (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`,
/// `AWS_ENDPOINT_URL`), then the profile (`AWS_PROFILE`, `~/.aws/credentials` and
/// `~/.aws/config`), then a web identity or a container's credentials, then the instance's role
/// on EC2; anonymous where none of these is there (or with `AWS_NO_SIGN_REQUEST=true`).
fn s3(bucket: &str) -> std::result::Result<object_store::aws::AmazonS3, String> {
    use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey as K};
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let mut b = AmazonS3Builder::from_env().with_bucket_name(bucket);
    let profile = Profile::load(env("AWS_PROFILE").as_deref().unwrap_or("default"));
    let has_keys = env("AWS_ACCESS_KEY_ID").is_some();
    if !has_keys
        && let (Some(id), Some(secret)) = (profile.get("aws_access_key_id"), profile.get("aws_secret_access_key"))
    {
        b = b.with_access_key_id(id).with_secret_access_key(secret);
        if let Some(token) = profile.get("aws_session_token") {
            b = b.with_token(token);
        }
    }
    if env("AWS_REGION").is_none() && env("AWS_DEFAULT_REGION").is_none() {
        b = b.with_region(profile.get("region").unwrap_or("us-east-1"));
    }
    let endpoint_set = ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT"].iter().any(|k| env(k).is_some());
    if !endpoint_set && let Some(endpoint) = profile.get("endpoint_url") {
        b = b.with_endpoint(endpoint);
    }
    let endpoint = b.get_config_value(&K::S3Endpoint).or_else(|| b.get_config_value(&K::Endpoint));
    let plain = endpoint.as_deref().is_some_and(|e| e.starts_with("http://"));
    let signed = has_keys
        || profile.get("aws_access_key_id").is_some()
        || env("AWS_WEB_IDENTITY_TOKEN_FILE").is_some()
        || env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").is_some()
        || env("AWS_CONTAINER_CREDENTIALS_FULL_URI").is_some()
        || on_ec2();
    let no_sign = env("AWS_NO_SIGN_REQUEST").is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
    if no_sign || !signed {
        b = b.with_skip_signature(true);
    }
    b.with_retry(retry()).with_client_options(options(plain)).build().map_err(|e| e.to_string())
}

/// Whether this machine is an EC2 instance (whose role the instance metadata service gives):
/// asked only there, so that elsewhere no request waits on an address that does not answer.
fn on_ec2() -> bool {
    if std::env::var("AWS_EC2_METADATA_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true")) {
        return false;
    }
    ["/sys/class/dmi/id/sys_vendor", "/sys/class/dmi/id/board_vendor"]
        .iter()
        .any(|f| std::fs::read_to_string(f).is_ok_and(|v| v.contains("Amazon")))
}

/// The settings of one AWS profile, from the shared credentials file and the config file
/// (`[name]` in the first, `[profile name]` or `[default]` in the second; the credentials
/// file's values win).
#[derive(Default)]
struct Profile(HashMap<String, String>);

impl Profile {
    fn load(name: &str) -> Profile {
        let home = std::env::var("HOME").unwrap_or_default();
        let file = |var: &str, default: &str| std::env::var(var).unwrap_or_else(|_| format!("{home}/.aws/{default}"));
        let mut values = HashMap::new();
        let config_section = if name == "default" { "default".to_owned() } else { format!("profile {name}") };
        for (path, section) in [
            (file("AWS_CONFIG_FILE", "config"), config_section),
            (file("AWS_SHARED_CREDENTIALS_FILE", "credentials"), name.to_owned()),
        ] {
            if let Ok(text) = std::fs::read_to_string(&path) {
                values.extend(ini_section(&text, &section));
            }
        }
        for k in ["aws_secret_access_key", "aws_session_token"] {
            if let Some(v) = values.get(k) {
                crate::error::remember_secret(v);
            }
        }
        Profile(values)
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str).filter(|v| !v.is_empty())
    }
}

/// The `key = value` lines of `[section]` in an INI text (comments `#` and `;`).
fn ini_section(text: &str, section: &str) -> HashMap<String, String> {
    let mut inside = false;
    let mut out = HashMap::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = name.trim() == section;
        } else if inside && let Some((k, v)) = line.split_once('=') {
            out.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_urls_carry_no_credentials_or_query() {
        assert_eq!(shown("https://user:pw@host:9000/a/b?X-Amz-Signature=abc"), "https://host:9000/a/b");
        assert_eq!(shown("s3://bucket/some%20key"), "s3://bucket/some%20key");
        assert!(is_url("s3://b/k") && is_url("https://h/p") && !is_url("/tmp/s3://x") && !is_url("model.safetensors"));
    }

    #[test]
    fn urls_without_a_bucket_or_of_other_schemes_are_refused() {
        for bad in [
            "s3:///key",
            "ftp://host/file",
            "not a url",
            "https://user:secret@host/p",
            "https://h/p?X-Amz-Signature=secret",
        ] {
            let e = Location::parse(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::BadUrl, "{bad}: {e}");
            assert!(!e.to_string().contains("secret"), "{e}");
        }
    }

    #[test]
    fn profiles_are_read_from_their_sections() {
        let text = "[default]\nregion = eu-west-1\n# c\n[profile lab]\nregion=us-west-2\nendpoint_url = http://h:1\n";
        assert_eq!(ini_section(text, "profile lab").get("region").map(String::as_str), Some("us-west-2"));
        assert_eq!(ini_section(text, "default").get("region").map(String::as_str), Some("eu-west-1"));
        assert!(ini_section(text, "other").is_empty());
    }
}
