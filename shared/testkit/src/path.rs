//! Parsing the request paths `kube::Api` generates.

/// Group, version and plural of a resource type. `group` is empty for the core API.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ResourceType {
    pub group: String,
    pub version: String,
    pub plural: String,
}

impl ResourceType {
    /// `apiVersion` of objects of this type: `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `deployments.apps` or `pods`, as the API server names resources in messages.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

/// `group` and `version` out of an `apiVersion`.
pub(crate) fn split_api_version(api_version: &str) -> (String, String) {
    match api_version.split_once('/') {
        Some((group, version)) => (group.to_owned(), version.to_owned()),
        None => (String::new(), api_version.to_owned()),
    }
}

/// A parsed resource path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ApiPath {
    pub resource: ResourceType,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

/// Parses `/api/v1/...` and `/apis/{group}/{version}/...`, namespaced or cluster-scoped:
/// `[namespaces/{ns}/]{plural}[/{name}[/{subresource}]]`.
pub(crate) fn parse(path: &str) -> Option<ApiPath> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] if !group.is_empty() => (*group, *version, rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        // `namespaces/x/status` is Namespace x's subresource, not a list of `status` objects in x.
        ["namespaces", _, sub] if is_namespace_subresource(sub) => (None, rest),
        ["namespaces", ns, tail @ ..] if !tail.is_empty() => (Some((*ns).to_owned()), tail),
        _ => (None, rest),
    };
    let (plural, name, subresource) = match rest {
        [plural] => (*plural, None, None),
        [plural, name] => (*plural, Some(*name), None),
        [plural, name, sub] => (*plural, Some(*name), Some(*sub)),
        _ => return None,
    };
    let blank = |s: &str| s.is_empty();
    if blank(version)
        || blank(plural)
        || name.is_some_and(blank)
        || subresource.is_some_and(blank)
        || namespace.as_deref().is_some_and(blank)
    {
        return None;
    }
    Some(ApiPath {
        resource: ResourceType {
            group: group.to_owned(),
            version: version.to_owned(),
            plural: plural.to_owned(),
        },
        namespace,
        name: name.map(str::to_owned),
        subresource: subresource.map(str::to_owned),
    })
}

fn is_namespace_subresource(segment: &str) -> bool {
    matches!(segment, "status" | "finalize")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn p(
        path: &str,
    ) -> (
        String,
        String,
        String,
        Option<String>,
        Option<String>,
        Option<String>,
    ) {
        let a = parse(path).unwrap();
        (
            a.resource.group,
            a.resource.version,
            a.resource.plural,
            a.namespace,
            a.name,
            a.subresource,
        )
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_owned())
    }

    #[test]
    fn core_and_group_paths() {
        assert_eq!(
            p("/api/v1/pods"),
            ("".into(), "v1".into(), "pods".into(), None, None, None)
        );
        assert_eq!(
            p("/api/v1/namespaces/ns/pods/web"),
            (
                "".into(),
                "v1".into(),
                "pods".into(),
                s("ns"),
                s("web"),
                None
            )
        );
        assert_eq!(
            p("/apis/apps/v1/namespaces/ns/deployments/web/scale"),
            (
                "apps".into(),
                "v1".into(),
                "deployments".into(),
                s("ns"),
                s("web"),
                s("scale")
            )
        );
        assert_eq!(
            p("/apis/autoscaling.openshift.io/v1/clusterautoscalers/default/status"),
            (
                "autoscaling.openshift.io".into(),
                "v1".into(),
                "clusterautoscalers".into(),
                None,
                s("default"),
                s("status")
            )
        );
        assert_eq!(
            p("/apis/apps/v1/namespaces/ns/deployments"),
            (
                "apps".into(),
                "v1".into(),
                "deployments".into(),
                s("ns"),
                None,
                None
            )
        );
    }

    #[test]
    fn namespaces_themselves() {
        assert_eq!(
            p("/api/v1/namespaces"),
            (
                "".into(),
                "v1".into(),
                "namespaces".into(),
                None,
                None,
                None
            )
        );
        assert_eq!(
            p("/api/v1/namespaces/ns"),
            (
                "".into(),
                "v1".into(),
                "namespaces".into(),
                None,
                s("ns"),
                None
            )
        );
        assert_eq!(
            p("/api/v1/namespaces/ns/status"),
            (
                "".into(),
                "v1".into(),
                "namespaces".into(),
                None,
                s("ns"),
                s("status")
            )
        );
    }

    #[test]
    fn rejects_other_paths() {
        for path in [
            "/",
            "/version",
            "/api",
            "/apis/apps",
            "/apis/apps/v1/a/b/c/d",
            "/api/v1/pods//x",
        ] {
            assert!(parse(path).is_none(), "{path}");
        }
    }

    #[test]
    fn api_version_and_qualified_name() {
        let r = parse("/apis/apps/v1/deployments").unwrap().resource;
        assert_eq!(
            (r.api_version(), r.qualified()),
            ("apps/v1".into(), "deployments.apps".into())
        );
        let r = parse("/api/v1/pods").unwrap().resource;
        assert_eq!(
            (r.api_version(), r.qualified()),
            ("v1".into(), "pods".into())
        );
        assert_eq!(split_api_version("apps/v1"), ("apps".into(), "v1".into()));
        assert_eq!(split_api_version("v1"), ("".into(), "v1".into()));
    }
}
