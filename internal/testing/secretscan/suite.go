package secretscan

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	zapraw "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

// ZapOption tees a controller-runtime zap logger into s at every verbosity, encoded as the
// manager's own JSON output (controller-runtime's KubeAwareEncoder over zap's production
// encoder), whatever level the logger's own output keeps.
func (s *Scanner) ZapOption() crzap.Opts {
	return crzap.RawZapOpts(zapraw.WrapCore(func(c zapcore.Core) zapcore.Core {
		enc := &crzap.KubeAwareEncoder{Encoder: zapcore.NewJSONEncoder(zapraw.NewProductionEncoderConfig())}
		all := zapraw.LevelEnablerFunc(func(zapcore.Level) bool { return true })
		return zapcore.NewTee(c, zapcore.NewCore(enc, zapcore.AddSync(s), all))
	}))
}

// Suite is the secret scan of one envtest suite: every Secret of its API server, every Event
// and the status of every DNSZone, DNSEndpoint, DNSRecord and Gslb, watched from the start; the
// manager's logs through ZapOption; its metrics at the end.
type Suite struct {
	*Scanner
	c client.Client
}

// StartSuite starts the watches of a suite on the API server of cfg (Watch), for the length of
// ctx; scheme must hold client-go's and dnsplane's kinds. Call it before the manager starts.
func StartSuite(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme) (*Suite, error) {
	s := New()
	if err := Watch(ctx, cfg, scheme, s, &dnsv1.DNSZone{}, &dnsv1.DNSEndpoint{}, &dnsv1.DNSRecord{}, &dnsv1.Gslb{}); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("secret scan: client: %w", err)
	}
	return &Suite{Scanner: s, c: c}, nil
}

// Verdict is the suite's last check, after its tests: it sweeps what the API server holds now
// (Sweep), checks the metrics of gs, and returns Err.
func (s *Suite) Verdict(gs ...prometheus.Gatherer) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := Sweep(ctx, s.c, s.Scanner, &dnsv1.DNSZoneList{}, &dnsv1.DNSEndpointList{}, &dnsv1.DNSRecordList{}, &dnsv1.GslbList{}); err != nil {
		return err
	}
	if err := s.CheckMetrics(gs...); err != nil {
		return err
	}
	return s.Err()
}
