//! `scontrol token [lifespan=SECONDS] [username=NAME]`: a JWT for the REST
//! API, printed as `SLURM_JWT=...` (Slurm's output). The controller signs
//! it; only root and SlurmUser may ask for another user's.

use drover_proto::MintTokenRequest;

use crate::conn;

/// The request from the words after `token`; errors are Slurm's lines.
pub fn parse(words: &[String]) -> Result<MintTokenRequest, Vec<String>> {
    let mut req = MintTokenRequest::default();
    for w in words {
        let (k, v) = w.split_once('=').unwrap_or((w.as_str(), ""));
        match k.to_ascii_lowercase().as_str() {
            "lifespan" => match v.parse::<i64>() {
                Ok(n) if n > 0 => req.lifespan = n,
                _ => return Err(vec![format!("Invalid lifespan: {v}")]),
            },
            "username" if !v.is_empty() => req.username = v.to_string(),
            _ => return Err(vec![format!("Invalid parameter: {w}")]),
        }
    }
    Ok(req)
}

pub async fn run(client: &mut drover_proto::client::Controller, req: MintTokenRequest) -> i32 {
    match client.mint_token(req).await {
        Ok(r) => {
            println!("SLURM_JWT={}", r.into_inner().token);
            0
        }
        Err(st) => {
            conn::report("scontrol", "Unable to create token: ", &st);
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_lifespan_and_username() {
        let r = parse(&words(&["lifespan=60", "UserName=bob"])).unwrap();
        assert_eq!(r.lifespan, 60);
        assert_eq!(r.username, "bob");
        assert_eq!(parse(&[]).unwrap(), MintTokenRequest::default());
        for bad in [
            &["lifespan=x"][..],
            &["lifespan=0"],
            &["colour=red"],
            &["username="],
        ] {
            assert!(parse(&words(bad)).is_err(), "{bad:?}");
        }
    }
}
