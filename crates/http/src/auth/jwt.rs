//! Bearer tokens: JWTs signed by a key of a JWKS (RSA, EC or Ed25519; shared-secret keys are
//! refused), with issuer and audience checked and `exp` required. The key set is held in
//! memory and replaced as a whole ([`JwtVerifier::replace_keys`]) by whoever fetches it, at
//! start and on refresh: validating a token never touches the network.

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use serde_json::Value;
use std::sync::{Arc, RwLock};

#[derive(Debug, thiserror::Error)]
pub enum JwtError {
    #[error("the key set is not a JWKS: {0}")]
    KeySet(String),
    #[error("the key set has no usable public key")]
    NoKeys,
    #[error("no key of the set matches the token")]
    UnknownKey,
    #[error("the token does not verify: {0}")]
    Invalid(String),
    #[error("the token has no string claim '{0}'")]
    NoPrincipal(String),
}

/// How tokens are checked and read.
#[derive(Clone, Debug)]
pub struct JwtSettings {
    /// Required `iss`, when set.
    pub issuer: Option<String>,
    /// Required `aud`, when set.
    pub audience: Option<String>,
    /// The claim naming the principal (a dotted path such as `sub` or `ext.user`).
    pub principal_claim: String,
    /// The claim carrying roles: an array of strings, or one space-separated string.
    pub roles_claim: String,
}

impl Default for JwtSettings {
    fn default() -> Self {
        JwtSettings {
            issuer: None,
            audience: None,
            principal_claim: "sub".into(),
            roles_claim: "roles".into(),
        }
    }
}

/// Validates Bearer tokens against the current key set.
pub struct JwtVerifier {
    settings: JwtSettings,
    keys: RwLock<Arc<JwkSet>>,
}

/// Parses a JWKS document, keeping only public keys of asymmetric algorithms.
fn parse_keys(jwks: &str) -> Result<JwkSet, JwtError> {
    let mut set: JwkSet =
        serde_json::from_str(jwks).map_err(|e| JwtError::KeySet(e.to_string()))?;
    set.keys.retain(|k| {
        matches!(
            k.algorithm,
            AlgorithmParameters::RSA(_)
                | AlgorithmParameters::EllipticCurve(_)
                | AlgorithmParameters::OctetKeyPair(_)
        ) && DecodingKey::from_jwk(k).is_ok()
    });
    if set.keys.is_empty() {
        return Err(JwtError::NoKeys);
    }
    Ok(set)
}

/// The value at a dotted claim path.
fn claim<'a>(claims: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(claims, |v, part| v.get(part))
}

impl JwtVerifier {
    pub fn new(settings: JwtSettings, jwks: &str) -> Result<JwtVerifier, JwtError> {
        Ok(JwtVerifier {
            settings,
            keys: RwLock::new(Arc::new(parse_keys(jwks)?)),
        })
    }

    /// Swaps in a freshly fetched key set; a bad one is refused and the current one kept.
    pub fn replace_keys(&self, jwks: &str) -> Result<(), JwtError> {
        let set = parse_keys(jwks)?;
        *self.keys.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(set);
        Ok(())
    }

    /// The principal name and roles of a valid token.
    pub fn verify(&self, token: &str) -> Result<(String, Vec<String>), JwtError> {
        self.verify_with_expiry(token)
            .map(|(name, roles, _)| (name, roles))
    }

    /// The principal name, roles and `exp` (seconds since the epoch) of a valid token.
    pub fn verify_with_expiry(&self, token: &str) -> Result<(String, Vec<String>, u64), JwtError> {
        let header = decode_header(token).map_err(|e| JwtError::Invalid(e.to_string()))?;
        let keys = self.keys.read().unwrap_or_else(|e| e.into_inner()).clone();
        let jwk = select_key(&keys, header.kid.as_deref()).ok_or(JwtError::UnknownKey)?;
        let key = DecodingKey::from_jwk(jwk).map_err(|e| JwtError::Invalid(e.to_string()))?;
        // The algorithm comes from the token's header but must belong to the key's family
        // (and equal the key's `alg` when it names one): no HMAC with a public key.
        let alg = header.alg;
        let fits_key = alg.family() == key.family()
            && jwk
                .common
                .key_algorithm
                .is_none_or(|k| k.to_string() == format!("{alg:?}"));
        if !fits_key || alg.family() == jsonwebtoken::AlgorithmFamily::Hmac {
            return Err(JwtError::Invalid(format!(
                "algorithm {alg:?} does not fit the key"
            )));
        }
        let claims = decode::<Value>(token, &key, &self.validation(alg))
            .map_err(|e| JwtError::Invalid(e.to_string()))?
            .claims;
        let name = claim(&claims, &self.settings.principal_claim)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| JwtError::NoPrincipal(self.settings.principal_claim.clone()))?;
        let roles = match claim(&claims, &self.settings.roles_claim) {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            Some(Value::String(s)) => s.split_whitespace().map(str::to_string).collect(),
            _ => Vec::new(),
        };
        let expires = claims.get("exp").and_then(Value::as_u64).unwrap_or(0);
        Ok((name.to_string(), roles, expires))
    }

    fn validation(&self, alg: Algorithm) -> Validation {
        let mut validation = Validation::new(alg);
        // A token is not valid before its `nbf` either (the same leeway as `exp`).
        validation.validate_nbf = true;
        // `iss` and `aud` are only compared when present, so require them when configured.
        let mut required = vec!["exp"];
        required.extend(self.settings.issuer.as_ref().map(|_| "iss"));
        required.extend(self.settings.audience.as_ref().map(|_| "aud"));
        validation.set_required_spec_claims(&required);
        match &self.settings.issuer {
            Some(issuer) => validation.set_issuer(&[issuer]),
            None => validation.iss = None,
        }
        match &self.settings.audience {
            Some(audience) => validation.set_audience(&[audience]),
            None => validation.validate_aud = false,
        }
        validation
    }
}

/// The key named by `kid`, or the only key when the token names none.
fn select_key<'a>(keys: &'a JwkSet, kid: Option<&str>) -> Option<&'a Jwk> {
    match kid {
        Some(kid) => keys.find(kid),
        None if keys.keys.len() == 1 => keys.keys.first(),
        None => None,
    }
}
