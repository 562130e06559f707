//! Issuing: a fresh CA and a serving certificate signed by it.

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use time::OffsetDateTime;

use super::material::Material;
use super::{CLOCK_SKEW, CertificateError, REFRESH_WINDOW, ServiceIdentity, VALIDITY};

/// Organization of the certificates' subjects.
const ORGANIZATION: &str = "opcat";

/// A new CA and a serving certificate for `identity`, issued at `now`: the CA is valid
/// [`VALIDITY`], the serving certificate until one [`REFRESH_WINDOW`] before the CA ends (as
/// OLM's `rotateAt`); both start [`CLOCK_SKEW`] before `now`. The CA's private key is dropped
/// here: nothing is ever signed with it again (the next rotation makes a new CA).
pub fn issue(identity: &ServiceIdentity, now: Timestamp) -> Result<Material, CertificateError> {
    let generate = |error: rcgen::Error| CertificateError::Generate {
        service: identity.to_string(),
        message: error.to_string(),
    };
    let not_before = offset(identity, now, -signed(CLOCK_SKEW))?;
    let ca_not_after = offset(identity, now, signed(VALIDITY))?;
    let serving_not_after = offset(identity, now, signed(VALIDITY) - signed(REFRESH_WINDOW))?;

    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(generate)?;
    ca_params.distinguished_name = subject(&format!(
        "opcat webhook CA for {}/{}",
        identity.namespace, identity.service
    ));
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    ca_params.not_before = not_before;
    ca_params.not_after = ca_not_after;
    let ca_key = KeyPair::generate().map_err(generate)?;
    let ca_cert = ca_params.self_signed(&ca_key).map_err(generate)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let names = identity.dns_names();
    let mut serving_params = CertificateParams::new(names.clone()).map_err(generate)?;
    serving_params.distinguished_name = subject(&names[1]);
    serving_params.is_ca = IsCa::ExplicitNoCa;
    serving_params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    serving_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    serving_params.use_authority_key_identifier_extension = true;
    serving_params.not_before = not_before;
    serving_params.not_after = serving_not_after;
    let serving_key = KeyPair::generate().map_err(generate)?;
    let serving_cert = serving_params
        .signed_by(&serving_key, &issuer)
        .map_err(generate)?;

    Ok(Material::new(
        ca_cert.pem(),
        serving_cert.pem(),
        serving_key.serialize_pem(),
        None,
    ))
}

fn subject(common_name: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::OrganizationName, ORGANIZATION);
    name.push(DnType::CommonName, common_name);
    name
}

fn signed(duration: std::time::Duration) -> SignedDuration {
    // The constants are days, far below SignedDuration's range.
    SignedDuration::try_from(duration).unwrap_or(SignedDuration::MAX)
}

/// `now + by` as rcgen's date type, whole seconds (X.509 has no finer resolution).
fn offset(
    identity: &ServiceIdentity,
    now: Timestamp,
    by: SignedDuration,
) -> Result<OffsetDateTime, CertificateError> {
    let out_of_range = || CertificateError::Time {
        service: identity.to_string(),
        at: format!("{now} + {by:#}"),
    };
    let at = now.checked_add(by).map_err(|_| out_of_range())?;
    OffsetDateTime::from_unix_timestamp(at.as_second()).map_err(|_| out_of_range())
}
