package controllers_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/provider/factory"
)

// TestSecretScan_Canary proves the suite's secret scan (scan, in runSuite) is wired to every
// place it watches: a PowerDNS Secret's API key, leaked on purpose into the manager's log (at a
// debug verbosity the suite's own output drops), an Event, a DNSEndpoint's status and a metric,
// is found in each of the four. The test then forgives that one value, so the suite's verdict
// stays clean; with SECRETSCAN_CANARY_KEEP=1 it does not, and the suite must fail at its end,
// naming the four places (how the verdict itself was checked: docs/reliability.md, "Secrets").
func TestSecretScan_Canary(t *testing.T) {
	ns := namespace(t, "scan-canary")
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	value := "canary-" + hex.EncodeToString(b)
	keep := os.Getenv("SECRETSCAN_CANARY_KEEP") == "1"
	if !keep {
		t.Cleanup(func() { scan.Forgive(value) })
	}
	create(t, secretObj(ns, "pdns", factory.TypePDNS, map[string]string{"PDNS_API_URL": "http://127.0.0.1:1", "PDNS_API_KEY": value}))

	// 1. The log, at V(2): the suite prints errors only, the scan sees every level.
	logf.Log.WithName("canary").V(2).Info("leaking a Secret value on purpose", "key", value)
	// 2. An Event, as a controller would record it.
	create(t, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: "canary.leak"},
		InvolvedObject: corev1.ObjectReference{Kind: "Secret", Namespace: ns, Name: "pdns"},
		Reason:         "Canary", Message: "the key is " + value, Type: corev1.EventTypeWarning,
		FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
	})
	// 3. A status: a DNSEndpoint with no zone, whose condition messages are then rewritten.
	ep := endpointObj(ns, "canary", dnsv1.Endpoint{DNSName: "canary.nowhere.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.1"}})
	create(t, ep)
	eventually(t, 30*time.Second, "the leaky status written", func() error {
		if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(ep), ep); err != nil {
			return err
		}
		if len(ep.Status.Conditions) == 0 {
			return fmt.Errorf("no condition yet")
		}
		for i := range ep.Status.Conditions {
			ep.Status.Conditions[i].Message += " " + value
		}
		return k8s.Status().Update(ctxT(t), ep)
	})
	// 4. A metric's label.
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dnsplane_test_canary", Help: "A secret scan canary."}, []string{"key"})
	metricsReg.MustRegister(g)
	g.WithLabelValues(value).Set(1)
	if err := scan.CheckMetrics(metricsReg); err != nil {
		t.Fatal(err)
	}
	if !keep {
		metricsReg.Unregister(g)
	}

	want := []string{"log", "Event " + ns + "/canary.leak", "status of DNSEndpoint " + ns + "/canary", "metrics"}
	eventually(t, 30*time.Second, "the scan sees the canary in "+strings.Join(want, ", "), func() error {
		var where []string
		for _, h := range scan.Hits() {
			if h.Needle.Secret == ns+"/pdns" && h.Needle.Form == "raw" {
				where = append(where, strings.SplitN(h.Where, " (", 2)[0])
			}
			if strings.Contains(h.String(), value) {
				return fmt.Errorf("a hit shows the value: %s", h)
			}
		}
		for _, w := range want {
			if !slices.Contains(where, w) {
				return fmt.Errorf("seen in %q, not yet in %q", where, w)
			}
		}
		return nil
	})
}
