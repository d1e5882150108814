package crd

import "testing"

func TestDefinitions_HoldsTheFourKinds(t *testing.T) {
	crds, err := decode()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"DNSZone": false, "DNSEndpoint": false, "DNSRecord": false, "Gslb": false}
	for _, c := range crds {
		if c.Spec.Group != "dnsplane.io" {
			t.Errorf("%s: group %q", c.Name, c.Spec.Group)
		}
		want[c.Spec.Names.Kind] = true
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("kind %s not embedded", k)
		}
	}
	if len(crds) != 4 {
		t.Errorf("got %d CRDs, want 4", len(crds))
	}
}
