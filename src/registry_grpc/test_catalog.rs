//! A small catalog that exercises every part of the API mapping (tests only): two packages,
//! replaces and skips, an embedded CSV, `olm.csv.metadata`, requirements, deprecations and a
//! blob of a custom schema.

use std::path::Path;

use base64::Engine as _;

use crate::fbc::{Catalog, DeclarativeConfig};

/// The CSV embedded in `etcd.v0.9.2` (YAML, as bundles often hold it).
pub const ETCD_CSV_YAML: &str = "apiVersion: operators.coreos.com/v1alpha1\n\
kind: ClusterServiceVersion\n\
metadata:\n  name: etcd.v0.9.2\nspec:\n  displayName: etcd\n  version: 0.9.2\n";

/// A CRD embedded in `etcd.v0.9.2` (JSON).
pub const ETCD_CRD_JSON: &str = r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"etcdclusters.etcd.database.coreos.com"}}"#;

/// The catalog text.
pub fn text() -> String {
    let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    format!(
        r#"---
schema: olm.package
name: etcd
defaultChannel: stable
description: A key-value store.
icon:
  base64data: PHN2Zy8+
  mediatype: image/svg+xml
---
schema: olm.channel
package: etcd
name: stable
entries:
  - name: etcd.v0.9.0
  - name: etcd.v0.9.2
    replaces: etcd.v0.9.0
    skips: [etcd.v0.9.1]
    skipRange: ">=0.9.0 <0.9.2"
---
schema: olm.channel
package: etcd
name: alpha
entries:
  - name: etcd.v0.9.2
---
schema: olm.bundle
package: etcd
name: etcd.v0.9.0
image: registry.example.com/etcd-bundle:v0.9.0
relatedImages:
  - name: operator
    image: registry.example.com/etcd:v0.9.0
properties:
  - type: olm.package
    value: {{packageName: etcd, version: 0.9.0}}
  - type: olm.gvk
    value: {{group: etcd.database.coreos.com, kind: EtcdCluster, version: v1beta2}}
  - type: olm.csv.metadata
    value:
      displayName: etcd
      installModes: [{{type: OwnNamespace, supported: true}}]
---
schema: olm.bundle
package: etcd
name: etcd.v0.9.2
image: ""
properties:
  - type: olm.package
    value: {{packageName: etcd, version: 0.9.2}}
  - type: olm.gvk
    value: {{group: etcd.database.coreos.com, kind: EtcdCluster, version: v1beta2}}
  - type: olm.gvk.required
    value: {{group: certs.example.com, kind: Issuer, version: v1}}
  - type: olm.package.required
    value: {{packageName: certs, versionRange: ">=1.0.0"}}
  - type: acme.label
    value: {{tier: gold}}
  - type: olm.bundle.object
    value: {{data: {csv}}}
  - type: olm.bundle.object
    value: {{data: {crd}}}
---
schema: olm.package
name: certs
defaultChannel: v1
---
schema: olm.channel
package: certs
name: v1
entries:
  - name: certs.v1.0.0
---
schema: olm.bundle
package: certs
name: certs.v1.0.0
image: registry.example.com/certs-bundle:v1.0.0
properties:
  - type: olm.package
    value: {{packageName: certs, version: 1.0.0}}
  - type: olm.gvk
    value: {{group: certs.example.com, kind: Issuer, version: v1}}
---
schema: olm.deprecations
package: etcd
entries:
  - reference: {{schema: olm.channel, name: alpha}}
    message: alpha is no longer updated
  - reference: {{schema: olm.bundle, name: etcd.v0.9.0}}
    message: etcd.v0.9.0 has a known bug
---
schema: acme.note
package: etcd
name: hello
text: a custom blob
---
schema: acme.note
name: global
text: a blob of no package
"#,
        csv = b64(ETCD_CSV_YAML),
        crd = b64(ETCD_CRD_JSON),
    )
}

/// The catalog content, parsed.
pub fn config() -> DeclarativeConfig {
    DeclarativeConfig::parse(&text(), Path::new("catalog.yaml")).expect("test catalog parses")
}

/// The catalog, validated.
pub fn catalog() -> Catalog {
    Catalog::new(config()).expect("test catalog is valid")
}
