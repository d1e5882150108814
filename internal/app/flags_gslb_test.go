package app

import (
	"bytes"
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// TestParseFlags_GslbWitnessesAndClockOffset: --ext-gslb-witnesses and --gslb-witness reach
// app.Config; the hidden --gslb-clock-offset shifts the Gslb clock and is left out of --help;
// bad combinations are refused, naming the flag.
func TestParseFlags_GslbWitnessesAndClockOffset(t *testing.T) {
	o, _, err := parseFlags([]string{"--geo-tag=eu", "--ext-gslb-clusters=us=127.0.0.12:53", "--ext-gslb-witnesses=w=127.0.0.13:53",
		"--gslb-clock-offset=-2m"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := o.config(&rest.Config{}, environ{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.GslbWitnesses, []gslb.Peer{{GeoTag: "w", Addr: "127.0.0.13:53"}}) || cfg.GslbWitness {
		t.Fatalf("witnesses %+v, witness %t", cfg.GslbWitnesses, cfg.GslbWitness)
	}
	if cfg.GslbClock == nil {
		t.Fatal("--gslb-clock-offset: no Gslb clock")
	}
	if d := time.Until(cfg.GslbClock.Now()); d > -119*time.Second || d < -121*time.Second {
		t.Fatalf("Gslb clock is %s off, want -2m", d)
	}
	o, _, err = parseFlags([]string{"--geo-tag=w", "--ext-gslb-clusters=eu=127.0.0.11:53,us=127.0.0.12:53", "--gslb-witness"})
	if err != nil || !o.gslb.witness {
		t.Fatalf("witness mode: %v", err)
	}
	if cfg, _ := o.config(&rest.Config{}, environ{}); !cfg.GslbWitness || cfg.GslbClock != nil {
		t.Fatalf("witness config %+v", cfg)
	}
	for args, want := range map[string]string{
		"--gslb-witness":                       "--gslb-witness needs --geo-tag and --ext-gslb-clusters",
		"--ext-gslb-witnesses=w":               "--ext-gslb-witnesses: gslb peers: entry 1",
		"--ext-gslb-witnesses=us=127.0.0.1:53": `geo tag "us" is also in --ext-gslb-clusters`,
		"--ext-gslb-witnesses=eu=127.0.0.1:53": `geo tag "eu" is this manager's --geo-tag`,
		"--gslb-clock-offset=soon":             "gslb-clock-offset",
		"--ext-gslb-witnesses=W=127.0.0.1:53":  `geo tag "W" has upper case`,
		"--geo-tag=EU":                         `--geo-tag: geo tag "EU" has upper case`,
		"--ext-gslb-clusters=US=127.0.0.12:53": `--ext-gslb-clusters: gslb peers: entry 1 "US=127.0.0.12:53": geo tag "US" has upper case`,
	} {
		_, _, err := parseFlags([]string{"--geo-tag=eu", "--ext-gslb-clusters=us=127.0.0.12:53", args})
		if args == "--gslb-witness" {
			_, _, err = parseFlags([]string{args})
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", args, err, want)
		}
	}
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	var help bytes.Buffer
	fs.SetOutput(&help)
	var f gslbFlags
	f.bind(fs)
	fs.Usage()
	if !strings.Contains(help.String(), "-ext-gslb-witnesses") || strings.Contains(help.String(), "clock-offset") {
		t.Fatalf("--help:\n%s", help.String())
	}
}
