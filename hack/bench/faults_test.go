package main

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/faultproxy"
)

func TestFaultConfigFromEnv(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		rows []string // scenario names, in order; nil when err is set
		err  string
	}{
		{"events only", map[string]string{"FAULT_KINDS": "none"}, []string{
			"PowerDNS restarted mid-batch", "manager SIGKILLed ×3 in one sync", "kube-apiserver restarted mid-sync",
			"etcd restarted mid-sync", "kube-apiserver restarted during a 1% change", "etcd restarted during a 1% change"}, ""},
		{"one kind, two rates, two events", map[string]string{"FAULT_KINDS": "http-503", "FAULT_RATES": "10,50", "FAULT_EVENTS": "etcd-restart,apiserver-restart-change"},
			[]string{"http-503 10%", "http-503 50%", "etcd restarted mid-sync", "kube-apiserver restarted during a 1% change"}, ""},
		{"mixed, no events", map[string]string{"FAULT_KINDS": "mixed", "FAULT_RATES": "30", "FAULT_EVENTS": "none"}, []string{"mixed 30%"}, ""},
		{"unknown event", map[string]string{"FAULT_EVENTS": "reboot"}, nil, `unknown event "reboot"`},
		{"unknown kind", map[string]string{"FAULT_KINDS": "gremlins"}, nil, `unknown kind "gremlins"`},
		{"size not a multiple of the zones", map[string]string{"FAULT_SIZE": "15"}, nil, "FAULT_SIZE"},
		{"request timeout not a duration", map[string]string{"FAULT_REQUEST_TIMEOUT": "5"}, nil, "FAULT_REQUEST_TIMEOUT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fc, err := faultConfigFromEnv(func(k string) string { return c.env[k] })
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, sc := range fc.scenarios() {
				got = append(got, sc.Name())
			}
			if strings.Join(got, "|") != strings.Join(c.rows, "|") {
				t.Fatalf("rows %q, want %q", got, c.rows)
			}
			if want := 5 * time.Second; fc.requestTimeout != want {
				t.Fatalf("request timeout %v, want the default %v", fc.requestTimeout, want)
			}
		})
	}
}

func TestFaultResultCount_CountsFromBeforeToAfter(t *testing.T) {
	before := faultproxy.Counts{Requests: 10, Forwarded: 8, ByKind: map[faultproxy.Kind]uint64{faultproxy.Pass: 8, faultproxy.Reset: 2}}
	after := faultproxy.Counts{Requests: 30, Forwarded: 22, ByKind: map[faultproxy.Kind]uint64{faultproxy.Pass: 22, faultproxy.Reset: 5, faultproxy.Hang: 3}}
	var res faultResult
	res.count(before, after, calls{Total: 7}, 4)
	if res.Requests != 20 || res.Forwarded != 14 || res.Faulted != 6 || res.PowerDNS.Total != 7 || res.RequestsPerRecord != 5 {
		t.Errorf("count = requests %d forwarded %d faulted %d powerdns %d per record %v, want 20 14 6 7 5",
			res.Requests, res.Forwarded, res.Faulted, res.PowerDNS.Total, res.RequestsPerRecord)
	}
	if want := map[string]int{faultproxy.Reset.String(): 3, faultproxy.Hang.String(): 3}; !maps.Equal(res.ByFault, want) {
		t.Errorf("ByFault = %v, want %v", res.ByFault, want)
	}
}
