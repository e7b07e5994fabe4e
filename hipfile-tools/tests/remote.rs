//! The tool with URLs, against a real S3 server (SeaweedFS): `hipfile cp` both ways,
//! `hipfile load URL --verify` straight from the store and through the node cache,
//! `hipfile cache`.

#[path = "../../hipfile-remote/tests/common/mod.rs"]
mod stores;

use std::process::Command;

fn hipfile(endpoint: &str, env: &[(&str, &str)], args: &[&str]) -> (bool, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hipfile"));
    cmd.args(args).env_remove("HIPFILE_BACKEND").env_remove("HIPFILE_LOG").env_remove("HIPFILE_REMOTE_CACHE");
    cmd.env("AWS_ENDPOINT_URL", endpoint).env("AWS_REGION", "us-east-1").env_remove("AWS_ACCESS_KEY_ID");
    cmd.env("AWS_CONFIG_FILE", "/nonexistent").env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent");
    let out = cmd.envs(env.iter().copied()).output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// A safetensors file of two tensors, laid out in order.
fn checkpoint() -> Vec<u8> {
    let (w, b) = (stores::pattern(4 << 20, 9), stores::pattern(3000, 10));
    let header = format!(
        r#"{{"w":{{"dtype":"U8","shape":[{}],"data_offsets":[0,{}]}},"b":{{"dtype":"I16","shape":[1500],"data_offsets":[{},{}]}}}}"#,
        w.len(),
        w.len(),
        w.len(),
        w.len() + b.len()
    );
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&w);
    out.extend_from_slice(&b);
    out
}

#[test]
fn cp_load_and_cache_take_urls() {
    let Some(weed) = stores::Weed::start(None) else { return };
    weed.bucket("tool");
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("model.safetensors");
    std::fs::write(&local, checkpoint()).unwrap();
    let run = |env: &[(&str, &str)], args: &[&str]| hipfile(&weed.endpoint, env, args);

    let (ok, out, err) = run(&[], &["cp", local.to_str().unwrap(), "s3://tool/m/model.safetensors", "--verify"]);
    assert!(ok && out.contains("verified"), "{out}{err}");
    let back = dir.path().join("back.safetensors");
    let (ok, _, err) = run(&[], &["cp", "s3://tool/m/model.safetensors", back.to_str().unwrap(), "--verify", "--json"]);
    assert!(ok, "{err}");
    assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&local).unwrap());
    let (ok, _, err) = run(&[], &["cp", "s3://tool/m/model.safetensors", back.to_str().unwrap()]);
    assert!(!ok && err.contains("exists"), "{err}");

    // Straight from the store, an object and a prefix.
    for url in ["s3://tool/m/model.safetensors", "s3://tool/m/"] {
        let (ok, out, err) = run(&[], &["load", url, "--verify", "--json"]);
        assert!(ok, "{url}: {err}");
        let report: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!((report["tensors"].as_u64(), report["verified_tensors"].as_u64()), (Some(2), Some(2)), "{out}");
    }
    // Through the node cache, which keeps it; `hipfile cache` lists and clears it.
    let cache = dir.path().join("cache");
    let env = [("HIPFILE_REMOTE_CACHE", cache.to_str().unwrap())];
    let (ok, _, err) = run(&env, &["load", "s3://tool/m/model.safetensors", "--verify"]);
    assert!(ok, "{err}");
    let (ok, out, err) = run(&env, &["cache", "--json"]);
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(listed["entries"][0]["url"], "s3://tool/m/model.safetensors", "{out}");
    let (ok, out, _) = run(&[], &["cache", "clear", "--dir", cache.to_str().unwrap()]);
    assert!(ok && out.contains("removed 1 entries"), "{out}");

    // The benchmark of an object's reads, verified.
    let (ok, out, err) = run(
        &[],
        &["bench", "--file", "s3://tool/m/model.safetensors", "--mode", "read,randread", "--runs", "2", "--json"],
    );
    assert!(ok, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["modes"][0]["verified"], true, "{out}");
    assert!(report["modes"][1]["best_gbps"].as_f64().unwrap() > 0.0, "{out}");
    let (ok, _, err) = run(&[], &["bench", "--file", "s3://tool/m/model.safetensors", "--mode", "write"]);
    assert!(!ok && err.contains("not written"), "{err}");

    // Errors name the URL.
    let (ok, _, err) = run(&[], &["load", "s3://tool/m/missing.safetensors"]);
    assert!(!ok && err.contains("s3://tool/m/missing.safetensors"), "{err}");
}
