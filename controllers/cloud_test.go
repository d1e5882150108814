package controllers_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	zapraw "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/azurefake"
	"github.com/dnsplane/dnsplane/internal/testing/bindtest"
	"github.com/dnsplane/dnsplane/internal/testing/clouddnsfake"
	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
	"github.com/dnsplane/dnsplane/internal/testing/route53fake"
)

// logs is the suite's log tap (see runSuite and TestSecrets_NeverLeak).
var logs logTap

// logTap receives a copy of every manager log entry, at every verbosity, while a test has it
// on; otherwise it enables no level, so it costs nothing. Entries are encoded as the manager's
// own JSON output (controller-runtime's KubeAwareEncoder over zap's production encoder).
type logTap struct {
	on  atomic.Bool // read on every level check of every logger: no lock
	mu  sync.Mutex  // guards buf
	buf bytes.Buffer
}

// zapOption tees the manager's zap core into the tap.
func (l *logTap) zapOption() zap.Opts {
	return zap.RawZapOpts(zapraw.WrapCore(func(c zapcore.Core) zapcore.Core {
		enc := &zap.KubeAwareEncoder{Encoder: zapcore.NewJSONEncoder(zapraw.NewProductionEncoderConfig())}
		tap := zapcore.NewCore(enc, zapcore.AddSync(l), zapraw.LevelEnablerFunc(func(zapcore.Level) bool { return l.active() }))
		return zapcore.NewTee(c, tap)
	}))
}

func (l *logTap) active() bool { return l.on.Load() }

// Write keeps p while the tap is on (zapcore.WriteSyncer).
func (l *logTap) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.on.Load() {
		l.buf.Write(p)
	}
	return len(p), nil
}

// Sync is a no-op (zapcore.WriteSyncer).
func (l *logTap) Sync() error { return nil }

// start empties the tap and turns it on until the test ends; the returned function returns
// what was logged so far.
func (l *logTap) start(t *testing.T) func() string {
	l.mu.Lock()
	l.buf.Reset()
	l.mu.Unlock()
	l.on.Store(true)
	t.Cleanup(func() {
		l.on.Store(false)
		l.mu.Lock()
		defer l.mu.Unlock()
		l.buf.Reset()
	})
	return func() string {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.buf.String()
	}
}

// trustHTTPTestCert makes this process trust the certificate that every httptest TLS server,
// and so the Azure fake, presents. The factory builds Azure clients with azcore's default
// transport, which trusts the system roots only, so the certificate goes where an operator puts
// a private CA for the manager: a bundle named by SSL_CERT_FILE (crypto/x509 reads it once, when
// the system roots are first needed, so runSuite calls this before anything uses TLS). A bundle
// SSL_CERT_FILE already named is kept. It returns the bundle's path, for removal.
func trustHTTPTestCert() (string, error) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	bundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	srv.Close()
	if prev := os.Getenv("SSL_CERT_FILE"); prev != "" {
		b, err := os.ReadFile(prev)
		if err != nil {
			return "", fmt.Errorf("read SSL_CERT_FILE: %w", err)
		}
		bundle = append(append(b, '\n'), bundle...)
	}
	f, err := os.CreateTemp("", "dnsplane-test-roots-*.pem")
	if err != nil {
		return "", err
	}
	if _, err := f.Write(bundle); err != nil {
		_ = f.Close()
		return f.Name(), err
	}
	if err := f.Close(); err != nil {
		return f.Name(), err
	}
	return f.Name(), os.Setenv("SSL_CERT_FILE", f.Name())
}

// azureTrusted skips the test unless the factory-built Azure client trusts fake's certificate.
func azureTrusted(t *testing.T, fake *azurefake.Server) {
	t.Helper()
	if err := trusted(fake); err != nil {
		t.Skipf("the factory builds Azure clients with azcore's default transport (system roots), and this "+
			"process does not trust the Azure fake's certificate (%v): runSuite's trustHTTPTestCert must run before "+
			"the system roots load, or factory.Factory needs an HTTP transport for Azure (azure.Config.Transport)", err)
	}
}

// cloud is one cloud fake with the Secret that points the factory at it.
type cloud struct {
	secretType corev1.SecretType
	data       map[string]string // the Secret's keys, DNS_ADDRESS included
	dnsAddr    string
}

// startRoute53 starts a Route 53 fake, accepting secretKey as its secret access key when not
// empty, stopped when t ends.
func startRoute53(t *testing.T, secretKey string) (*route53fake.Server, cloud) {
	fake := route53fake.New()
	if secretKey != "" {
		fake.SecretAccessKey = secretKey
	}
	t.Cleanup(fake.Close)
	return fake, cloud{secretType: "dnsplane.io/aws", dnsAddr: fake.DNSAddr(), data: map[string]string{
		"AWS_ACCESS_KEY_ID": fake.AccessKeyID, "AWS_SECRET_ACCESS_KEY": fake.SecretAccessKey, "AWS_REGION": "us-east-1",
		"AWS_ENDPOINT_URL": fake.URL, "DNS_ADDRESS": fake.DNSAddr()}}
}

// startCloudDNS starts a Cloud DNS fake, with its service-account key file in the Secret,
// stopped when t ends.
func startCloudDNS(t *testing.T) (*clouddnsfake.Server, cloud) {
	fake := clouddnsfake.New()
	t.Cleanup(fake.Close)
	return fake, cloud{secretType: "dnsplane.io/google", dnsAddr: fake.DNSAddr(), data: map[string]string{
		"GOOGLE_PROJECT_ID": "fake-project", "GOOGLE_APPLICATION_CREDENTIALS_JSON": fake.ServiceAccountJSON(),
		"GOOGLE_ENDPOINT_URL": fake.URL, "DNS_ADDRESS": fake.DNSAddr()}}
}

// startAzure starts an Azure DNS fake, accepting clientSecret as its client secret when not
// empty, stopped when t ends.
func startAzure(t *testing.T, clientSecret string) (*azurefake.Server, cloud) {
	fake := azurefake.New()
	if clientSecret != "" {
		fake.ClientSecret = clientSecret
	}
	t.Cleanup(fake.Close)
	return fake, cloud{secretType: "dnsplane.io/azure", dnsAddr: fake.DNSAddr(), data: map[string]string{
		"AZURE_SUBSCRIPTION_ID": "00000000-0000-0000-0000-000000000001", "AZURE_RESOURCE_GROUP": "dns-rg",
		"AZURE_TENANT_ID": "tenant-1", "AZURE_CLIENT_ID": fake.ClientID, "AZURE_CLIENT_SECRET": fake.ClientSecret,
		"AZURE_ENDPOINT_URL": fake.URL, "AZURE_AUTHORITY_HOST": fake.URL + "/", "DNS_ADDRESS": fake.DNSAddr()}}
}

// with returns a copy of data with the given keys replaced.
func with(data map[string]string, kv ...string) map[string]string {
	out := make(map[string]string, len(data))
	for k, v := range data {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func secretObj(ns, name string, typ corev1.SecretType, data map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: typ, StringData: data}
}

// usingSecret makes a DNSZone name the Secret secret.
func usingSecret(secret string) func(*dnsv1.DNSZone) {
	return func(z *dnsv1.DNSZone) { z.Spec.ProviderRef.Name = secret }
}

// TestCloudFakes_DNSZoneBecomesReady: the controllers never special-case a cloud. For Route 53,
// Cloud DNS and Azure DNS, a DNSZone whose Secret points the factory-built SDK client at the
// cloud's fake creates the hosted zone there, and becomes Ready because the fake's DNS server,
// named by DNS_ADDRESS, answers its SOA authoritatively; a DNSEndpoint's A record is then served
// by the fake's DNS; deleting the DNSEndpoint removes the record, and deleting the DNSZone
// removes the hosted zone from the fake (its DNS answers REFUSED).
func TestCloudFakes_DNSZoneBecomesReady(t *testing.T) {
	for i, name := range []string{"route53", "clouddns", "azure"} {
		t.Run(name, func(t *testing.T) {
			var c cloud
			var r53 *route53fake.Server
			switch name {
			case "route53":
				r53, c = startRoute53(t, "")
			case "clouddns":
				_, c = startCloudDNS(t)
			case "azure":
				var fake *azurefake.Server
				fake, c = startAzure(t, "")
				azureTrusted(t, fake)
			}
			ns := "cloud-" + name
			zone := name + ".cloud.test"
			target := "192.0.2." + strconv.Itoa(100+i)
			create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, secretObj(ns, "dns", c.secretType, c.data))
			z := zoneObj(ns, "z", zone, nil)
			ep := endpointObj(ns, "www", dnsv1.Endpoint{DNSName: "www." + zone, RecordType: "A", Targets: dnsv1.Targets{target}})
			create(t, z, ep)
			waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
			soa := dnstest.Ask(t, c.dnsAddr, zone, dns.TypeSOA)
			if !soa.Authoritative || len(soa.Answer) != 1 {
				t.Fatalf("the fake's SOA for %s: %v", zone, soa)
			}
			nsAnswer := dnstest.Ask(t, c.dnsAddr, zone, dns.TypeNS)
			if z.Status.ZoneID == "" || len(z.Status.NameServers) == 0 || len(nsAnswer.Answer) != len(z.Status.NameServers) {
				t.Fatalf("status zoneID %q nameServers %v; the fake's NS answer %v", z.Status.ZoneID, z.Status.NameServers, nsAnswer.Answer)
			}
			waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)
			r := dnstest.Ask(t, c.dnsAddr, "www."+zone, dns.TypeA)
			if !r.Authoritative || len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != target {
				t.Fatalf("the fake's answer for www.%s A: %v", zone, r)
			}
			// Served (docs/served.md): Route 53 through GetChange (the fake says PENDING once,
			// then INSYNC); Cloud DNS and Azure DNS are not checked yet.
			if r53 != nil {
				cond := waitCondition(t, ep, dnsv1.ConditionServed, metav1.ConditionTrue, dnsv1.ReasonServed)
				if n := r53.Count("GetChange"); n < 2 {
					t.Fatalf("Served=True (%s) after %d GetChange calls, want the PENDING one and the INSYNC one", cond.Message, n)
				}
				t.Logf("Route 53: %s (%d GetChange)", cond.Message, r53.Count("GetChange"))
			} else {
				waitCondition(t, ep, dnsv1.ConditionServed, metav1.ConditionUnknown, dnsv1.ReasonNotChecked)
			}

			if err := k8s.Delete(ctxT(t), ep); err != nil {
				t.Fatal(err)
			}
			waitGone(t, ep)
			eventually(t, 10*time.Second, "record removed from the fake", func() error {
				if r := dnstest.Ask(t, c.dnsAddr, "www."+zone, dns.TypeA); len(r.Answer) != 0 {
					return fmt.Errorf("still answered: %v", r.Answer)
				}
				return nil
			})
			if err := k8s.Delete(ctxT(t), z); err != nil {
				t.Fatal(err)
			}
			waitGone(t, z)
			if r := dnstest.Ask(t, c.dnsAddr, zone, dns.TypeSOA); r.Rcode != dns.RcodeRefused {
				t.Fatalf("the hosted zone is still at the fake after the DNSZone was deleted: %v", r)
			}
		})
	}
}

// firstReady watches the DNSZones of a namespace and records, per name, the first version of
// each that carries a Ready condition, and when it arrived.
type firstReady struct {
	mu    sync.Mutex
	zones map[string]firstSeen
}

type firstSeen struct {
	zone *dnsv1.DNSZone
	at   time.Time
}

func watchFirstReady(t *testing.T, ns string) *firstReady {
	t.Helper()
	wc, err := client.NewWithWatch(restCfg, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := wc.Watch(ctx, &dnsv1.DNSZoneList{}, client.InNamespace(ns))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(); cancel() })
	fr := &firstReady{zones: map[string]firstSeen{}}
	go func() {
		for ev := range w.ResultChan() {
			z, ok := ev.Object.(*dnsv1.DNSZone)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) || findCond(z.Status.Conditions, dnsv1.ConditionReady) == nil {
				continue
			}
			fr.mu.Lock()
			if _, seen := fr.zones[z.Name]; !seen {
				fr.zones[z.Name] = firstSeen{zone: z.DeepCopy(), at: time.Now()}
			}
			fr.mu.Unlock()
		}
	}()
	return fr
}

func findCond(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

// wait returns the first version of zone name that had a Ready condition, within timeout.
func (fr *firstReady) wait(t *testing.T, name string, timeout time.Duration) firstSeen {
	t.Helper()
	var got firstSeen
	eventually(t, timeout, "a first Ready condition on "+name, func() error {
		fr.mu.Lock()
		defer fr.mu.Unlock()
		s, ok := fr.zones[name]
		if !ok {
			return errors.New("none yet")
		}
		got = s
		return nil
	})
	return got
}

// TestCredentials_WrongKeyGivesInvalidCredentials: a DNSZone whose Secret holds a wrong
// credential gets Ready=False, reason InvalidCredentials, from its first reconcile: a wrong
// PowerDNS API key (a real pdns_server answers 401), a wrong TSIG secret for an adopted BIND zone,
// a Route 53 access key ID the fake does not know (403 InvalidClientTokenId) or a wrong secret
// access key (403 SignatureDoesNotMatch), and a wrong Azure client secret (the fake's token
// endpoint answers invalid_client).
//
// "Within one reconcile": the controller exposes no per-object reconcile count (its
// controller_runtime_reconcile_total is per controller, and other tests' zones reconcile too).
// Every reconcile writes the conditions it computed, so a watch started before the DNSZones
// exist sees the status each reconcile wrote: the first status that carries a Ready condition
// must already say InvalidCredentials and describe the current generation (the condition's and
// the status's observedGeneration); how long it took is logged.
func TestCredentials_WrongKeyGivesInvalidCredentials(t *testing.T) {
	pdnsSrv := pdnstest.Start(t)
	bind := bindtest.Start(t)
	adopted := bind.AddZone(t, "creds")
	_, r53 := startRoute53(t, "")
	azFake, az := startAzure(t, "")
	ns := "creds"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	fr := watchFirstReady(t, ns)

	type wrong struct {
		zone   *dnsv1.DNSZone
		secret *corev1.Secret
	}
	cases := []wrong{
		{zoneObj(ns, "pdns", "wrong.pdns.test", usingSecret("pdns")), secretObj(ns, "pdns", "dnsplane.io/pdns", map[string]string{
			"PDNS_API_URL": pdnsSrv.APIURL, "PDNS_API_KEY": "wrong-" + pdnsSrv.Key, "DNS_ADDRESS": pdnsSrv.DNSAddr})},
		{zoneObj(ns, "rfc2136", adopted, func(z *dnsv1.DNSZone) { z.Spec.ProviderRef.Name = "rfc2136"; z.Spec.ZoneID = adopted }),
			secretObj(ns, "rfc2136", "dnsplane.io/rfc2136", map[string]string{"RFC2136_HOST": bind.Host, "RFC2136_PORT": strconv.Itoa(bind.Port),
				"RFC2136_TSIG_KEYNAME": bindtest.KeyName, "RFC2136_TSIG_SECRET": base64.StdEncoding.EncodeToString([]byte("not the TSIG key of this server")),
				"DNS_ADDRESS": bind.Addr()})},
		{zoneObj(ns, "aws-key-id", "key-id.r53.test", usingSecret("aws-key-id")),
			secretObj(ns, "aws-key-id", r53.secretType, with(r53.data, "AWS_ACCESS_KEY_ID", "AKIDNOTKNOWN"))},
		{zoneObj(ns, "aws-secret", "secret.r53.test", usingSecret("aws-secret")),
			secretObj(ns, "aws-secret", r53.secretType, with(r53.data, "AWS_SECRET_ACCESS_KEY", "not-the-secret"))},
	}
	if err := trusted(azFake); err == nil {
		cases = append(cases, wrong{zoneObj(ns, "azure", "wrong.azure.test", usingSecret("azure")),
			secretObj(ns, "azure", az.secretType, with(az.data, "AZURE_CLIENT_SECRET", "not-the-secret"))})
	} else {
		t.Logf("Azure skipped: the process does not trust the fake's certificate: %v", err)
	}
	created := time.Now()
	for _, c := range cases {
		create(t, c.secret, c.zone)
	}
	t.Cleanup(func() { deleteAll(t, ns) })
	for _, c := range cases {
		t.Run(c.zone.Name, func(t *testing.T) {
			first := fr.wait(t, c.zone.Name, 10*time.Second)
			ready := findCond(first.zone.Status.Conditions, dnsv1.ConditionReady)
			if ready.Status != metav1.ConditionFalse || ready.Reason != dnsv1.ReasonInvalidCredentials {
				t.Fatalf("first Ready condition %s/%s (%s), want False/InvalidCredentials", ready.Status, ready.Reason, ready.Message)
			}
			// It names the Secret to fix, and never a value (TestSecrets_NeverLeak).
			if want := "secret " + ns + "/" + c.secret.Name; !strings.Contains(ready.Message, want) {
				t.Fatalf("InvalidCredentials message %q does not name %s", ready.Message, want)
			}
			if gen := first.zone.Generation; ready.ObservedGeneration != gen || first.zone.Status.ObservedGeneration != gen {
				t.Fatalf("first Ready describes generation %d (status %d), the object is at %d", ready.ObservedGeneration, first.zone.Status.ObservedGeneration, gen)
			}
			t.Logf("first Ready condition, InvalidCredentials, %s after the DNSZones were created", first.at.Sub(created).Round(time.Millisecond))
			// It stays so: the error is terminal, not retried into another reason.
			waitCondition(t, c.zone, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonInvalidCredentials)
		})
	}
}

// trusted returns nil when this process's system roots (what azcore's default transport uses)
// verify the Azure fake's certificate for 127.0.0.1, else why not.
func trusted(fake *azurefake.Server) error {
	pool, err := x509.SystemCertPool()
	if err != nil {
		return err
	}
	_, err = fake.Certificate().Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"})
	return err
}

// deleteAll deletes every DNSEndpoint, then every DNSZone of ns, and waits until they are gone,
// so that none is left retrying against servers the test stops.
func deleteAll(t *testing.T, ns string) {
	t.Helper()
	ctx := ctxT(t)
	var eps dnsv1.DNSEndpointList
	if err := k8s.List(ctx, &eps, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range eps.Items {
		if err := k8s.Delete(ctx, &eps.Items[i]); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	for i := range eps.Items {
		waitGone(t, &eps.Items[i])
	}
	var zones dnsv1.DNSZoneList
	if err := k8s.List(ctx, &zones, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range zones.Items {
		if err := k8s.Delete(ctx, &zones.Items[i]); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	for i := range zones.Items {
		waitGone(t, &zones.Items[i])
	}
}

// TestSecrets_NeverLeak: with distinctive secret values in every kind of provider Secret, drive
// failures (wrong PowerDNS key, malformed PowerDNS Secret, wrong and malformed TSIG secrets,
// wrong Route 53 secret key, wrong Azure client secret) and successes (PowerDNS, BIND, Route 53,
// Cloud DNS and Azure zones with a published record each); then no DNSZone or DNSEndpoint
// status, no Event in the namespace and nothing the manager logged meanwhile, at any verbosity,
// contains any secret value, the working ones included.
func TestSecrets_NeverLeak(t *testing.T) {
	const marker = "s3cr3t-VALUE"
	var (
		pdnsWrong      = marker + "-xyz-pdns"
		pdnsMalformed  = marker + "-xyz-pdns-no-url"
		tsigMalformed  = marker + "-xyz-tsig" // not base64: the factory refuses it
		tsigWrong      = base64.StdEncoding.EncodeToString([]byte(marker + "-xyz-tsig-wrong"))
		awsSecret      = marker + "-xyz-aws-ok"
		awsWrong       = marker + "-xyz-aws-bad"
		azureSecret    = marker + "-xyz-azure-ok"
		azureWrong     = marker + "-xyz-azure-bad"
		tsigWrongBytes = marker + "-xyz-tsig-wrong"
	)
	pdnsSrv := pdnstest.Start(t)
	bind := bindtest.Start(t)
	goodZone, badZone, wrongZone := bind.AddZone(t, "leak-ok"), bind.AddZone(t, "leak-bad"), bind.AddZone(t, "leak-wrong")
	_, r53 := startRoute53(t, awsSecret)
	_, gcp := startCloudDNS(t)
	azFake, az := startAzure(t, azureSecret)
	azureOK := trusted(azFake) == nil
	if !azureOK {
		t.Log("Azure skipped: the process does not trust the fake's certificate")
	}
	read := logs.start(t)

	ns := "leak"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	pdnsData := map[string]string{"PDNS_API_URL": pdnsSrv.APIURL, "PDNS_API_KEY": pdnsSrv.Key, "PDNS_NAMESERVERS": "ns1.leak.test", "DNS_ADDRESS": pdnsSrv.DNSAddr}
	tsigData := map[string]string{"RFC2136_HOST": bind.Host, "RFC2136_PORT": strconv.Itoa(bind.Port), "RFC2136_TSIG_KEYNAME": bindtest.KeyName,
		"RFC2136_TSIG_SECRET": bind.Secret, "DNS_ADDRESS": bind.Addr()}
	secrets := []*corev1.Secret{
		secretObj(ns, "pdns-ok", "dnsplane.io/pdns", pdnsData),
		secretObj(ns, "pdns-wrong", "dnsplane.io/pdns", with(pdnsData, "PDNS_API_KEY", pdnsWrong)),
		secretObj(ns, "pdns-malformed", "dnsplane.io/pdns", map[string]string{"PDNS_API_KEY": pdnsMalformed}),
		secretObj(ns, "tsig-ok", "dnsplane.io/rfc2136", tsigData),
		secretObj(ns, "tsig-wrong", "dnsplane.io/rfc2136", with(tsigData, "RFC2136_TSIG_SECRET", tsigWrong)),
		secretObj(ns, "tsig-malformed", "dnsplane.io/rfc2136", with(tsigData, "RFC2136_TSIG_SECRET", tsigMalformed)),
		secretObj(ns, "aws-ok", r53.secretType, r53.data),
		secretObj(ns, "aws-wrong", r53.secretType, with(r53.data, "AWS_SECRET_ACCESS_KEY", awsWrong)),
		secretObj(ns, "gcp-ok", gcp.secretType, gcp.data),
	}
	adopt := func(zone, secret string) func(*dnsv1.DNSZone) {
		return func(z *dnsv1.DNSZone) { z.Spec.ProviderRef.Name = secret; z.Spec.ZoneID = zone }
	}
	good := []*dnsv1.DNSZone{
		zoneObj(ns, "pdns-ok", "ok.leak-pdns.test", usingSecret("pdns-ok")),
		zoneObj(ns, "tsig-ok", goodZone, adopt(goodZone, "tsig-ok")),
		zoneObj(ns, "aws-ok", "ok.leak-r53.test", usingSecret("aws-ok")),
		zoneObj(ns, "gcp-ok", "ok.leak-gcp.test", usingSecret("gcp-ok")),
	}
	bad := []*dnsv1.DNSZone{
		zoneObj(ns, "pdns-wrong", "wrong.leak-pdns.test", usingSecret("pdns-wrong")),
		zoneObj(ns, "pdns-malformed", "malformed.leak-pdns.test", usingSecret("pdns-malformed")),
		zoneObj(ns, "tsig-malformed", badZone, adopt(badZone, "tsig-malformed")),
		zoneObj(ns, "aws-wrong", "wrong.leak-r53.test", usingSecret("aws-wrong")),
	}
	// An adopted zone with a wrong TSIG secret: the DNSZone only reads (unsigned SOA), so the
	// failure shows on its DNSEndpoint, whose AXFR and UPDATE are signed.
	tsigWrongZone := zoneObj(ns, "tsig-wrong", wrongZone, adopt(wrongZone, "tsig-wrong"))
	if azureOK {
		secrets = append(secrets, secretObj(ns, "azure-ok", az.secretType, az.data),
			secretObj(ns, "azure-wrong", az.secretType, with(az.data, "AZURE_CLIENT_SECRET", azureWrong)))
		good = append(good, zoneObj(ns, "azure-ok", "ok.leak-azure.test", usingSecret("azure-ok")))
		bad = append(bad, zoneObj(ns, "azure-wrong", "wrong.leak-azure.test", usingSecret("azure-wrong")))
	}
	for _, s := range secrets {
		create(t, s)
	}
	direct, err := client.New(restCfg, client.Options{Scheme: k8s.Scheme()}) // uncached reads
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Let the wrong-TSIG DNSEndpoint be deleted: its records are released with a signed AXFR.
		fix := &corev1.Secret{}
		err := direct.Get(ctxT(t), client.ObjectKey{Namespace: ns, Name: "tsig-wrong"}, fix)
		if err == nil {
			fix.Data["RFC2136_TSIG_SECRET"] = []byte(bind.Secret)
			err = direct.Update(ctxT(t), fix)
		}
		if err != nil {
			t.Errorf("repair the tsig-wrong Secret: %v", err)
		}
		deleteAll(t, ns)
	})
	var eps []*dnsv1.DNSEndpoint
	for i, z := range good {
		create(t, z)
		ep := endpointObj(ns, z.Name, dnsv1.Endpoint{DNSName: "www." + z.Spec.Zone, RecordType: "A", Targets: dnsv1.Targets{"192.0.2." + strconv.Itoa(10+i)}})
		ep.Spec.ZoneRef = &dnsv1.ZoneReference{Name: z.Name}
		create(t, ep)
		eps = append(eps, ep)
	}
	for _, z := range bad {
		create(t, z)
	}
	create(t, tsigWrongZone)
	tsigWrongEP := endpointObj(ns, "tsig-wrong", dnsv1.Endpoint{DNSName: "www." + wrongZone, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.99"}})
	tsigWrongEP.Spec.ZoneRef = &dnsv1.ZoneReference{Name: tsigWrongZone.Name}
	create(t, tsigWrongEP)

	for _, z := range good {
		waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	}
	for _, ep := range eps {
		waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)
	}
	for _, z := range bad {
		waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonInvalidCredentials)
	}
	eventually(t, 30*time.Second, "the wrong-TSIG DNSEndpoint fails", func() error {
		c, err := condition(t, tsigWrongEP, dnsv1.ConditionReady)
		if err != nil {
			return err
		}
		// The adopted zone's signed SOA check already refuses the key (Ready=False
		// InvalidCredentials), so the endpoint waits for it; either way nothing is written.
		if c.Status != metav1.ConditionFalse {
			return fmt.Errorf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
		}
		return nil
	})

	// What must never appear: every secret value, working or not, the wrong TSIG key's decoded
	// bytes, and any line of the Cloud DNS service account's private key.
	needles := append([]string{marker, pdnsSrv.Key, bind.Secret, pdnsWrong, pdnsMalformed, tsigMalformed, tsigWrong, tsigWrongBytes,
		awsSecret, awsWrong, azureSecret, azureWrong}, privateKeyLines(t, gcp.data["GOOGLE_APPLICATION_CREDENTIALS_JSON"])...)
	longestFirst := slices.SortedFunc(slices.Values(needles), func(a, b string) int { return len(b) - len(a) })
	// check reports where a needle appears, with some context and the needle masked, so that the
	// test output does not carry the value either.
	check := func(where, text string) {
		t.Helper()
		masked := text
		for _, n := range longestFirst {
			masked = strings.ReplaceAll(masked, n, "<SECRET>")
		}
		if i := strings.Index(masked, "<SECRET>"); i >= 0 {
			t.Errorf("%s contains a secret value: %q", where, masked[max(0, i-80):min(len(masked), i+120)])
		}
	}
	ctx := ctxT(t)
	var zones dnsv1.DNSZoneList
	var endpoints dnsv1.DNSEndpointList
	if err := direct.List(ctx, &zones, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := direct.List(ctx, &endpoints, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	sawInvalid := false
	for _, z := range zones.Items {
		b, _ := json.Marshal(z.Status)
		check("DNSZone "+z.Name+" status", string(b))
		sawInvalid = sawInvalid || strings.Contains(string(b), dnsv1.ReasonInvalidCredentials)
	}
	for _, ep := range endpoints.Items {
		b, _ := json.Marshal(ep.Status)
		check("DNSEndpoint "+ep.Name+" status", string(b))
	}
	if !sawInvalid || len(zones.Items) != len(good)+len(bad)+1 {
		t.Fatalf("the check is vacuous: %d DNSZones, InvalidCredentials seen: %t", len(zones.Items), sawInvalid)
	}
	// Events are recorded asynchronously: wait until every failing DNSZone has one.
	var events corev1.EventList
	eventually(t, 10*time.Second, "Events for every failing DNSZone", func() error {
		if err := direct.List(ctx, &events, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, z := range bad {
			found := false
			for _, e := range events.Items {
				found = found || (e.InvolvedObject.Name == z.Name && e.InvolvedObject.Kind == "DNSZone")
			}
			if !found {
				return fmt.Errorf("no Event for DNSZone %s yet", z.Name)
			}
		}
		return nil
	})
	for _, e := range events.Items {
		b, _ := json.Marshal(e)
		check("Event "+e.Name, string(b))
	}
	var newEvents eventsv1.EventList
	if err := direct.List(ctx, &newEvents, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range newEvents.Items {
		b, _ := json.Marshal(e)
		check("events.k8s.io Event "+e.Name, string(b))
	}
	logged := read()
	if !strings.Contains(logged, ns) {
		t.Fatalf("the log tap caught nothing about namespace %s (%d bytes)", ns, len(logged))
	}
	for _, line := range strings.Split(logged, "\n") {
		check("manager log", line)
		if dumped := hexDumps(line); dumped != "" {
			check("a hex dump in the manager log entry "+logMessage(line), dumped)
		}
	}
}

// logMessage returns the level and message of one JSON log entry.
func logMessage(entry string) string {
	var e struct{ Level, Msg string }
	_ = json.Unmarshal([]byte(entry), &e)
	return strconv.Quote(e.Level + " " + e.Msg)
}

// hexDumps returns the bytes of every encoding/hex.Dump found in the string fields of one JSON
// log entry (client-go dumps binary bodies so), concatenated: a secret split across dump lines
// is whole again there. "" when there is none.
func hexDumps(entry string) string {
	var fields map[string]any
	if json.Unmarshal([]byte(entry), &fields) != nil {
		return ""
	}
	var out []byte
	for _, v := range fields {
		s, ok := v.(string)
		if !ok {
			continue
		}
		for _, line := range strings.Split(s, "\n") {
			// "00000000  6b 38 73 00 0a 0c 0a 02  76 31 12 06 53 65 63 72  |k8s.....v1..Secr|"
			if len(line) < 10 || line[8:10] != "  " {
				continue
			}
			if _, err := strconv.ParseUint(line[:8], 16, 32); err != nil {
				continue
			}
			cols, _, _ := strings.Cut(line[10:], "|")
			for _, h := range strings.Fields(cols) {
				if b, err := strconv.ParseUint(h, 16, 8); err == nil && len(h) == 2 {
					out = append(out, byte(b))
				}
			}
		}
	}
	return string(out)
}

// privateKeyLines returns the lines of the PEM private key in a service-account key file, each
// one contiguous however the file's newlines are escaped: nothing may hold any of them.
func privateKeyLines(t *testing.T, keyFile string) []string {
	t.Helper()
	var sa struct {
		PrivateKey string `json:"private_key"`
	}
	if err := json.Unmarshal([]byte(keyFile), &sa); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(sa.PrivateKey), "\n")
	if len(lines) < 4 {
		t.Fatalf("unexpected key file shape: %d lines", len(lines))
	}
	return lines[1 : len(lines)-1] // without BEGIN and END
}
