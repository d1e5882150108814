package chart

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"testing"
)

// args returns the manager container's args.
func args(t *testing.T, r rendering) []string {
	t.Helper()
	var out []string
	for _, a := range manager(t, r.one(t, "Deployment", ""))["args"].([]any) {
		out = append(out, a.(string))
	}
	return out
}

// hasArgs fails unless every want is among the manager's args.
func hasArgs(want ...string) func(*testing.T, rendering) {
	return func(t *testing.T, r rendering) {
		t.Helper()
		got := args(t, r)
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("args %v lack %s", got, w)
			}
		}
	}
}

// lacksArgs fails if any of flags' prefixes starts one of the manager's args.
func lacksArgs(prefixes ...string) func(*testing.T, rendering) {
	return func(t *testing.T, r rendering) {
		t.Helper()
		for _, a := range args(t, r) {
			for _, p := range prefixes {
				if len(a) >= len(p) && a[:len(p)] == p {
					t.Errorf("args hold %s", a)
				}
			}
		}
	}
}

// field fails unless the one object of kind named *suffix has want at path.
func field(kind, suffix string, want any, path ...string) func(*testing.T, rendering) {
	return func(t *testing.T, r rendering) {
		t.Helper()
		got := lookup(r.one(t, kind, suffix).Object, path...)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s *%s %v = %#v, want %#v", kind, suffix, path, got, want)
		}
	}
}

// lookup returns the value at path in v, where a path element indexes a map by key or a list
// by a decimal index; nil when there is none.
func lookup(v any, path ...string) any {
	for _, p := range path {
		switch c := v.(type) {
		case map[string]any:
			v = c[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

// count fails unless the rendering holds n objects of kind.
func count(kind string, n int) func(*testing.T, rendering) {
	return func(t *testing.T, r rendering) {
		t.Helper()
		if got := len(r.all(kind)); got != n {
			t.Errorf("%d %s objects, want %d", got, kind, n)
		}
	}
}

// TestChartValues: each value reaches the manager's flags or the object it configures.
func TestChartValues(t *testing.T) {
	podSpec := []string{"spec", "template", "spec"}
	for _, tc := range []struct {
		name   string
		sets   []string
		checks []func(*testing.T, rendering)
	}{
		{"defaults", nil, []func(*testing.T, rendering){
			hasArgs("--leader-elect", "--metrics-bind-address=:8443"),
			lacksArgs("--watch-namespaces", "--owner-id", "--metrics-secure", "--geo-tag", "--ext-gslb-clusters", "--gslb-", "--source",
				"--domain-filter", "--exclude-domains", "--annotation-filter", "--label-filter", "--ingress-class", "--gateway-name", "--namespace=", "--publish-internal", "--geoip-database"),
			count("CustomResourceDefinition", 4), count("ServiceMonitor", 0), count("PodDisruptionBudget", 1),
			count("ClusterRoleBinding", 1), // the manager's: the metrics-reader binding is opt-in
			field("Service", "metrics", "https", "spec", "ports", "0", "name"),
			field("CustomResourceDefinition", "dnszones.dnsplane.io", "keep", "metadata", "annotations", "helm.sh/resource-policy"),
			field("Deployment", "", "dnsplane/manager:0.1.0", append(podSpec, "containers", "0", "image")...),
		}},
		{"namespaced", namespacedSets, []func(*testing.T, rendering){
			hasArgs("--watch-namespaces=dnsplane-system,team-a,team-b", "--owner-id=cluster-a", "--metrics-bind-address=127.0.0.1:8080"),
			count("Service", 1), // dns only: metrics on loopback has no Service
		}},
		{"namespaced, release namespace listed too", []string{"namespaced=true", "ownerID=x", "watchNamespaces={dnsplane-system,a}"}, []func(*testing.T, rendering){
			hasArgs("--watch-namespaces=dnsplane-system,a"), count("Role", 3),
		}},
		{"gslb", []string{"geoTag=eu", "gslb.peers[0].geoTag=us", "gslb.peers[0].address=203.0.113.1:53", "gslb.peers[1].geoTag=ap",
			"gslb.peers[1].address=peer.example:5353", "gslb.interval=10s", "gslb.peerTimeout=1s", "gslb.peerPort=5353", "gslb.nsAddress=198.51.100.7",
			"gslb.sourceAddress=192.0.2.10\\,2001:db8::10"},
			[]func(*testing.T, rendering){hasArgs("--geo-tag=eu", "--ext-gslb-clusters=us=203.0.113.1:53,ap=peer.example:5353",
				"--gslb-interval=10s", "--gslb-peer-timeout=1s", "--gslb-peer-port=5353", "--gslb-ns-address=198.51.100.7",
				"--gslb-source-address=192.0.2.10,2001:db8::10")}},
		{"gslb witness", []string{"geoTag=w", "gslb.peers[0].geoTag=eu", "gslb.peers[0].address=203.0.113.1:53", "gslb.witness=true",
			"gslb.witnesses[0].geoTag=w2", "gslb.witnesses[0].address=203.0.113.3:53"},
			[]func(*testing.T, rendering){hasArgs("--geo-tag=w", "--ext-gslb-clusters=eu=203.0.113.1:53", "--gslb-witness",
				"--ext-gslb-witnesses=w2=203.0.113.3:53")}},
		{"geoip database from a volume", []string{"gslb.geoip.volume.persistentVolumeClaim.claimName=geoip", "gslb.geoip.file=dbip-country.mmdb"},
			[]func(*testing.T, rendering){hasArgs("--geoip-database=/etc/dnsplane/geoip/dbip-country.mmdb"),
				field("Deployment", "", "geoip", append(podSpec, "volumes", "2", "persistentVolumeClaim", "claimName")...),
				field("Deployment", "", "/etc/dnsplane/geoip", append(podSpec, "containers", "0", "volumeMounts", "2", "mountPath")...),
				field("Deployment", "", true, append(podSpec, "containers", "0", "volumeMounts", "2", "readOnly")...)}},
		{"sources", []string{"sources={service,ingress,crd}", "domainFilters={example.com,example.org}", "excludeDomains={internal.example.com}",
			"annotationFilter=team=a", "labelFilter=env!=dev", "ingressClasses={nginx}", "gatewayName=public", "sourceNamespace=apps", "publishInternalServices=true"},
			[]func(*testing.T, rendering){hasArgs("--source=service", "--source=ingress", "--source=crd", "--domain-filter=example.com", "--domain-filter=example.org",
				"--exclude-domains=internal.example.com", "--annotation-filter=team=a", "--label-filter=env!=dev", "--ingress-class=nginx",
				"--gateway-name=public", "--namespace=apps", "--publish-internal-services")}},
		{"a webhook provider beside the manager", []string{"webhook.sidecars[0].name=hook", "webhook.sidecars[0].image=example/hook:v1",
			"webhook.sidecars[0].env[0].name=API_KEY", "webhook.sidecars[0].env[0].valueFrom.secretKeyRef.name=hook-credentials",
			"webhook.sidecars[0].env[0].valueFrom.secretKeyRef.key=api-key", "webhook.sidecars[1].name=other", "webhook.sidecars[1].image=example/other:v2",
			"webhook.sidecars[1].securityContext.runAsUser=1000"}, []func(*testing.T, rendering){
			field("Deployment", "", "manager", append(podSpec, "containers", "0", "name")...),
			field("Deployment", "", "example/hook:v1", append(podSpec, "containers", "1", "image")...),
			field("Deployment", "", "hook-credentials", append(podSpec, "containers", "1", "env", "0", "valueFrom", "secretKeyRef", "name")...),
			// The manager's securityContext unless the sidecar has its own.
			field("Deployment", "", true, append(podSpec, "containers", "1", "securityContext", "readOnlyRootFilesystem")...),
			field("Deployment", "", float64(1000), append(podSpec, "containers", "2", "securityContext", "runAsUser")...),
		}},
		{"no leader election, one replica", []string{"replicaCount=1", "leaderElection.enabled=false"}, []func(*testing.T, rendering){
			lacksArgs("--leader-elect"), count("PodDisruptionBudget", 0),
		}},
		{"metrics plain and off", []string{"metrics.secure=false", "metrics.serviceMonitor.enabled=true"}, []func(*testing.T, rendering){
			hasArgs("--metrics-secure=false"), field("ServiceMonitor", "", "http", "spec", "endpoints", "0", "scheme"),
			field("Service", "metrics", "http", "spec", "ports", "0", "name"),
		}},
		{"metrics reader bound", []string{"metrics.reader.serviceAccount.name=prometheus", "metrics.reader.serviceAccount.namespace=monitoring"},
			[]func(*testing.T, rendering){
				count("ClusterRoleBinding", 2),
				field("ClusterRoleBinding", "-metrics-reader", "dnsplane-metrics-reader", "roleRef", "name"),
				field("ClusterRole", "-metrics-reader", "dnsplane-metrics-reader", "metadata", "name"),
				field("ClusterRoleBinding", "-metrics-reader", []any{map[string]any{"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}}, "subjects"),
			}},
		{"metrics reader in the release namespace", []string{"metrics.reader.serviceAccount.name=prometheus"}, []func(*testing.T, rendering){
			field("ClusterRoleBinding", "-metrics-reader", "dnsplane-system", "subjects", "0", "namespace"),
		}},
		{"metrics disabled", []string{"metrics.bindAddress=0", "metrics.serviceMonitor.enabled=true"}, []func(*testing.T, rendering){
			hasArgs("--metrics-bind-address=0"), count("Service", 1), count("ServiceMonitor", 0),
		}},
		{"dns LoadBalancer", []string{"dns.service.type=LoadBalancer", "dns.service.externalTrafficPolicy=Local", "dns.service.nodePort=30053",
			"dns.service.annotations.a=b", "dns.service.loadBalancerSourceRanges={10.0.0.0/8}"}, []func(*testing.T, rendering){
			field("Service", "-dns", "LoadBalancer", "spec", "type"), field("Service", "-dns", "Local", "spec", "externalTrafficPolicy"),
			field("Service", "-dns", "b", "metadata", "annotations", "a"), field("Service", "-dns", float64(30053), "spec", "ports", "1", "nodePort"),
			field("Service", "-dns", []any{"10.0.0.0/8"}, "spec", "loadBalancerSourceRanges"),
		}},
		{"dns NodePort guarded", []string{"dns.service.type=NodePort", "dns.service.nodePort=30053"}, []func(*testing.T, rendering){
			field("Service", "-dns", "30053", "metadata", "annotations", "dnsplane.io/node-port"),
			count("ValidatingAdmissionPolicy", 1), count("ValidatingAdmissionPolicyBinding", 1),
			field("ValidatingAdmissionPolicyBinding", "", "dnsplane-dns-node-port.dnsplane-system", "spec", "policyName"),
		}},
		{"dns node port guard off", []string{"dns.service.type=NodePort", "dns.service.nodePort=30053", "dns.service.nodePortGuard=false"}, []func(*testing.T, rendering){
			count("ValidatingAdmissionPolicy", 0), count("ValidatingAdmissionPolicyBinding", 0),
		}},
		{"dns ClusterIP ignores external settings", []string{"dns.service.externalTrafficPolicy=Local", "dns.service.nodePort=30053"}, []func(*testing.T, rendering){
			field("Service", "-dns", nil, "spec", "externalTrafficPolicy"), field("Service", "-dns", nil, "spec", "ports", "0", "nodePort"),
			// The guard is rendered whatever the type: a rollback may return to a fixed node port.
			field("Service", "-dns", nil, "metadata", "annotations"), count("ValidatingAdmissionPolicy", 1),
		}},
		{"pod placement", []string{"nodeSelector.zone=a", "tolerations[0].key=k", "tolerations[0].operator=Exists", "priorityClassName=high",
			"topologySpreadConstraints[0].maxSkew=1", "topologySpreadConstraints[0].topologyKey=kubernetes.io/hostname",
			"topologySpreadConstraints[0].whenUnsatisfiable=DoNotSchedule", "podAnnotations.x=y"},
			[]func(*testing.T, rendering){
				field("Deployment", "", "a", append(podSpec, "nodeSelector", "zone")...),
				field("Deployment", "", "Exists", append(podSpec, "tolerations", "0", "operator")...),
				field("Deployment", "", "high", append(podSpec, "priorityClassName")...),
				field("Deployment", "", "dnsplane", append(podSpec, "topologySpreadConstraints", "0", "labelSelector", "matchLabels", "app.kubernetes.io/name")...),
				field("Deployment", "", "y", "spec", "template", "metadata", "annotations", "x"),
			}},
		{"extra args, env and resources", []string{"extraArgs={--zone-resync-interval=1h}", "extraEnv[0].name=GODEBUG", "extraEnv[0].value=x=1",
			"resources.limits.memory=1Gi", "serviceAccount.annotations.role=r"}, []func(*testing.T, rendering){
			hasArgs("--zone-resync-interval=1h"), field("Deployment", "", "GODEBUG", append(podSpec, "containers", "0", "env", "2", "name")...),
			field("Deployment", "", "1Gi", append(podSpec, "containers", "0", "resources", "limits", "memory")...),
			field("ServiceAccount", "", "r", "metadata", "annotations", "role"),
		}},
		{"pdb maxUnavailable", []string{"podDisruptionBudget.maxUnavailable=1"}, []func(*testing.T, rendering){
			field("PodDisruptionBudget", "", float64(1), "spec", "maxUnavailable"), field("PodDisruptionBudget", "", nil, "spec", "minAvailable"),
		}},
		{"CRDs left to the user", []string{"crds.install=false"}, []func(*testing.T, rendering){count("CustomResourceDefinition", 0)}},
		{"CRDs not kept", []string{"crds.keep=false"}, []func(*testing.T, rendering){
			field("CustomResourceDefinition", "gslbs.dnsplane.io", nil, "metadata", "annotations", "helm.sh/resource-policy"),
		}},
		{"existing ServiceAccount, no RBAC", []string{"serviceAccount.create=false", "serviceAccount.name=mine", "rbac.create=false"}, []func(*testing.T, rendering){
			count("ServiceAccount", 0), count("ClusterRole", 0), count("Role", 0),
			field("Deployment", "", "mine", append(podSpec, "serviceAccountName")...),
		}},
		{"image", []string{"image.repository=registry.example/dnsplane", "image.tag=v9"}, []func(*testing.T, rendering){
			field("Deployment", "", "registry.example/dnsplane:v9", append(podSpec, "containers", "0", "image")...),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rendering(render(t, tc.sets...))
			for i, check := range tc.checks {
				t.Run(fmt.Sprint(i), func(t *testing.T) { check(t, r) })
			}
		})
	}
}
