package main

import (
	"strings"
	"testing"
	"time"
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
