// Package aws is the dnsplane provider for Amazon Route 53 (Secret type
// dnsplane.io/aws), over the AWS SDK for Go v2.
//
// Zones are public hosted zones, or, with Config.PrivateZoneVPCID, private
// hosted zones associated with that VPC. EnsureZone is idempotent by caller
// reference: the zone is created with CreateHostedZone's CallerReference set
// to the spec's, and tagged TagCallerReference. Updates are written as an
// exact DELETE of Before plus a CREATE of After in one atomic
// ChangeResourceRecordSets batch, so a stale Before fails the batch
// (ErrConflict). One ApplyChanges is one ChangeResourceRecordSets request;
// Capabilities and RequestCost (provider.RequestSizer) declare what it costs
// (an Update its old plus its new records, values as sent), so that
// pkg/provider/guard, the only splitter, sends batches within Route 53's
// limits, each as exactly one request.
//
// Route-53-specific record features are set through RecordSet.ProviderSpecific
// with external-dns' names (KeyAlias, KeyEvaluateTargetHealth,
// KeyTargetHostedZone, KeyWeight).
package aws

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// TagCallerReference is the hosted-zone tag holding the ZoneSpec's caller
// reference.
const TagCallerReference = "dnsplane.io/caller-reference"

// ProviderSpecific keys, as external-dns' AWS provider names them (pkg/provider's constants).
const (
	// KeyAlias "true" makes an A or AAAA set a Route 53 alias (AliasTarget,
	// Route 53 API Reference): one target, the alias DNS name, and TTL 0.
	KeyAlias = provider.KeyAlias
	// KeyEvaluateTargetHealth is AliasTarget.EvaluateTargetHealth, "true" or
	// "false"; default "true".
	KeyEvaluateTargetHealth = provider.KeyAWSEvaluateTargetHealth
	// KeyTargetHostedZone is AliasTarget.HostedZoneId, the hosted zone ID of
	// the alias target (an ELB's, CloudFront's "Z2FDTNDATAQYW2", ...); default
	// the set's own zone (an alias to another record of the zone).
	KeyTargetHostedZone = provider.KeyAWSTargetHostedZone
	// KeyWeight is the routing weight, an integer 0..255 (Route 53 API
	// Reference, ResourceRecordSet.Weight); it sets RecordSet.Weight when that
	// is nil and needs a SetIdentifier. It is not kept in ProviderSpecific.
	KeyWeight = provider.KeyWeight
)

// DefaultRegion is used when Config.Region is empty (Route 53 is global).
const DefaultRegion = "us-east-1"

// retrySuffix separates a caller reference from the suffix added when the
// reference was already used by a since-deleted zone.
const retrySuffix = "#dnsplane-"

// DefaultTimeout bounds each HTTP attempt when Config.Timeout is 0, as PowerDNS's
// (pdns.DefaultTimeout): a hung connection costs one attempt of this length, not the zone
// writer's whole call.
const DefaultTimeout = 30 * time.Second

// Config configures a Provider (Secret keys in brackets).
type Config struct {
	AccessKeyID     string // AWS_ACCESS_KEY_ID; with SecretAccessKey, else the SDK default chain
	SecretAccessKey string // AWS_SECRET_ACCESS_KEY
	SessionToken    string // optional, with static keys
	Region          string // AWS_REGION; default DefaultRegion
	RoleARN         string // AWS_ROLE_ARN: assumed with STS over the base credentials
	EndpointURL     string // AWS_ENDPOINT_URL: Route 53 endpoint override (tests, proxies)
	// PrivateZoneVPCID (AWS_PRIVATE_ZONE_VPC_ID), when set, makes EnsureZone
	// create and find private hosted zones associated with this VPC
	// ("vpc-..."); empty: public zones.
	PrivateZoneVPCID string
	// PrivateZoneVPCRegion (AWS_PRIVATE_ZONE_VPC_REGION) is the VPC's region;
	// default Region, else DefaultRegion. Only with PrivateZoneVPCID.
	PrivateZoneVPCRegion string
	// DNSSECKMSKeyARN (AWS_DNSSEC_KMS_KEY_ARN) is the customer managed KMS key (ECC_NIST_P256,
	// SIGN_VERIFY, in us-east-1) that Route 53's key-signing keys are made in (EnableSigning);
	// empty: zones are not signed.
	DNSSECKMSKeyARN string
	// DNSSECRolloverKMSKeyARN (AWS_DNSSEC_ROLLOVER_KMS_KEY_ARN) is a second such KMS key: a KSK
	// rollover makes the new key-signing key in whichever of the two no KSK of the zone is in
	// (Route 53 takes one KSK per KMS key and hosted zone); empty: no KSK rollover.
	DNSSECRolloverKMSKeyARN string
	// HTTPClient, when set, sends the requests as is (Timeout is then not applied).
	HTTPClient *http.Client
	// Timeout bounds each HTTP attempt, its reply body included (the SDK retries an attempt
	// that timed out, up to MaxAttempts); 0 = DefaultTimeout.
	Timeout time.Duration
	// MaxAttempts bounds SDK attempts per call (throttling included); 0 = SDK default (3).
	MaxAttempts int
	// MaxBackoff bounds the SDK's retry backoff; 0 = SDK default (20 s).
	MaxBackoff time.Duration
	// ListPageSize is ListResourceRecordSets' maxitems; 0 = 300 (the API maximum).
	ListPageSize int32
	// WaitForSync makes ApplyChanges poll GetChange until INSYNC.
	WaitForSync bool
	// SyncPollInterval is the GetChange poll interval; default 2 s.
	SyncPollInterval time.Duration
}

// Provider is a Route 53 provider.
type Provider struct {
	client   *route53.Client
	pageSize int32
	wait     bool
	poll     time.Duration
	names    sync.Map   // zone ID -> canonical zone name (immutable in Route 53)
	vpc      *types.VPC // non-nil: zones are private, associated with this VPC
	kmsARN   string     // Config.DNSSECKMSKeyARN
	kmsARN2  string     // Config.DNSSECRolloverKMSKeyARN
	// pending are, per zone ID, the changes this process submitted that GetChange has not
	// yet reported INSYNC, oldest first (provider.ChangeSync); submitted is the second of the
	// last change per zone.
	mu        sync.Mutex
	pending   map[string][]pendingChange
	submitted map[string]uint32
	now       func() time.Time
}

// pendingChange is one submitted ChangeResourceRecordSets: its change ID and the second it was
// acknowledged.
type pendingChange struct {
	id string
	at uint32
}

var (
	_ provider.Provider      = (*Provider)(nil)
	_ provider.ZoneDrainer   = (*Provider)(nil)
	_ provider.RequestSizer  = (*Provider)(nil)
	_ provider.ChangeSync    = (*Provider)(nil)
	_ provider.ManagedSigner = (*Provider)(nil)
)

// New builds a Provider. It makes no API calls.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	if (cfg.AccessKeyID == "") != (cfg.SecretAccessKey == "") {
		return nil, fmt.Errorf("%w: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together", provider.ErrInvalidCredentials)
	}
	region := cfg.Region
	if region == "" {
		region = DefaultRegion
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if cfg.PrivateZoneVPCID == "" && cfg.PrivateZoneVPCRegion != "" {
		return nil, fmt.Errorf("%w: AWS_PRIVATE_ZONE_VPC_REGION needs AWS_PRIVATE_ZONE_VPC_ID", provider.ErrInvalidCredentials)
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRegion(region),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				if cfg.MaxAttempts > 0 {
					o.MaxAttempts = cfg.MaxAttempts
				}
				if cfg.MaxBackoff > 0 {
					o.MaxBackoff = cfg.MaxBackoff
					o.Backoff = retry.NewExponentialJitterBackoff(cfg.MaxBackoff)
				}
				o.RateLimiter = ratelimit.None
			})
		}),
	}
	if cfg.AccessKeyID != "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: loading AWS configuration: %v", provider.ErrInvalidCredentials, err)
	}
	if cfg.RoleARN != "" {
		awsCfg.Credentials = aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(sts.NewFromConfig(awsCfg), cfg.RoleARN))
	}
	client := route53.NewFromConfig(awsCfg, func(o *route53.Options) {
		// Set here, not in LoadDefaultConfig, which needs a buildable
		// client when AWS_CA_BUNDLE is set.
		buildable, ok := o.HTTPClient.(*awshttp.BuildableClient)
		switch {
		case cfg.HTTPClient != nil:
			o.HTTPClient = cfg.HTTPClient
		case ok: // AWS_CA_BUNDLE's client: keep its trust, add the bound
			o.HTTPClient = buildable.WithTimeout(timeout)
		case o.HTTPClient == nil:
			o.HTTPClient = awshttp.NewBuildableClient().WithTimeout(timeout)
		}
		if cfg.EndpointURL != "" {
			o.BaseEndpoint = aws.String(cfg.EndpointURL)
		}
	})
	p := &Provider{client: client, pageSize: cfg.ListPageSize, wait: cfg.WaitForSync, poll: cfg.SyncPollInterval, kmsARN: cfg.DNSSECKMSKeyARN, kmsARN2: cfg.DNSSECRolloverKMSKeyARN,
		pending: map[string][]pendingChange{}, submitted: map[string]uint32{}, now: time.Now}
	if cfg.PrivateZoneVPCID != "" {
		vr := cfg.PrivateZoneVPCRegion
		if vr == "" {
			vr = region
		}
		p.vpc = &types.VPC{VPCId: aws.String(cfg.PrivateZoneVPCID), VPCRegion: types.VPCRegion(vr)}
	}
	if p.pageSize <= 0 || p.pageSize > 300 {
		p.pageSize = 300
	}
	if p.poll <= 0 {
		p.poll = 2 * time.Second
	}
	return p, nil
}

// Capabilities reports Route 53's limits per ChangeResourceRecordSets request
// (AWS Route 53 API Reference, ChangeResourceRecordSets; Developer Guide,
// "Quotas on API requests"): 1,000 ResourceRecord elements and 32,000 value
// characters. An Update is sent as an exact DELETE plus a CREATE, never as an
// UPSERT, so it costs len(Before)+len(After) elements (provider.ChangeCost;
// the UPSERT cost, twice After, under-counts an update that shrinks a set).
func (p *Provider) Capabilities() provider.Capabilities {
	return provider.Capabilities{
		MaxChangesPerBatch:    maxElements,
		MaxValueBytesPerBatch: maxChars,
		ConditionalWrites:     true,
		WeightedRouting:       true,
		GeoRouting:            true,
		CreateZones:           true,
		BatchWrites:           true,
	}
}

// ---- errors ----

var throttleCodes = map[string]bool{"Throttling": true, "ThrottlingException": true, "PriorRequestNotComplete": true,
	"RequestLimitExceeded": true, "TooManyRequestsException": true}

var credentialCodes = map[string]bool{"AccessDenied": true, "AccessDeniedException": true, "InvalidSignatureException": true,
	"SignatureDoesNotMatch": true, "UnrecognizedClientException": true, "InvalidClientTokenId": true, "ExpiredToken": true,
	"ExpiredTokenException": true, "MissingAuthenticationToken": true, "IncompleteSignature": true, "NotAuthorizedException": true}

// conflictMessages are InvalidChangeBatch messages for a failed precondition.
var conflictMessages = []string{"already exists", "but it was not found", "do not match"}

func mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var icb *types.InvalidChangeBatch
	if errors.As(err, &icb) {
		for _, m := range icb.Messages {
			for _, c := range conflictMessages {
				if strings.Contains(m, c) {
					return fmt.Errorf("route53 %s: %w: %s", op, provider.ErrConflict, strings.Join(icb.Messages, "; "))
				}
			}
		}
		return fmt.Errorf("route53 %s: %w: %s", op, provider.ErrInvalidChange, strings.Join(append(icb.Messages, icb.ErrorMessage()), "; "))
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		code := api.ErrorCode()
		switch {
		case code == "NoSuchHostedZone":
			return fmt.Errorf("route53 %s: %w: %w", op, provider.ErrZoneNotFound, err)
		case throttleCodes[code]:
			return fmt.Errorf("route53 %s: %w", op, &provider.ThrottledError{Err: err})
		case credentialCodes[code]:
			return fmt.Errorf("route53 %s: %w: %w", op, provider.ErrInvalidCredentials, err)
		case code == "InvalidInput" || code == "InvalidDomainName":
			return fmt.Errorf("route53 %s: %w: %w", op, provider.ErrInvalidChange, err)
		case code == "HostedZoneNotEmpty":
			return fmt.Errorf("route53 %s: %w: %w", op, provider.ErrConflict, err)
		}
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() >= http.StatusInternalServerError {
		return fmt.Errorf("route53 %s: %w: %w", op, provider.ErrUnavailable, err)
	}
	return fmt.Errorf("route53 %s: %w", op, err)
}

// ---- zones ----

func stripZoneID(id string) string { return strings.TrimPrefix(id, "/hostedzone/") }

func callerRef(ref string) string {
	if i := strings.Index(ref, retrySuffix); i >= 0 {
		return ref[:i]
	}
	return ref
}

func toZone(hz *types.HostedZone, ds *types.DelegationSet, tags map[string]string) provider.Zone {
	z := provider.Zone{ID: stripZoneID(aws.ToString(hz.Id)), Name: dnswire.Dotless(aws.ToString(hz.Name)),
		CallerReference: callerRef(aws.ToString(hz.CallerReference))}
	if ds != nil {
		for _, n := range ds.NameServers {
			z.NameServers = append(z.NameServers, dnswire.Dotless(n))
		}
	}
	if ref, ok := tags[TagCallerReference]; ok {
		z.CallerReference = ref
	}
	if len(tags) > 0 {
		z.Tags = map[string]string{}
		for k, v := range tags {
			if k != TagCallerReference {
				z.Tags[k] = v
			}
		}
	}
	return z
}

func (p *Provider) tags(ctx context.Context, id string) (map[string]string, error) {
	out, err := p.client.ListTagsForResource(ctx, &route53.ListTagsForResourceInput{ResourceType: types.TagResourceTypeHostedzone, ResourceId: aws.String(id)})
	if err != nil {
		return nil, mapErr("ListTagsForResource", err)
	}
	m := map[string]string{}
	if out.ResourceTagSet != nil {
		for _, t := range out.ResourceTagSet.Tags {
			m[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
	}
	return m, nil
}

// GetZone returns a hosted zone by ID (with or without "/hostedzone/").
func (p *Provider) GetZone(ctx context.Context, id string) (provider.Zone, error) {
	id = stripZoneID(id)
	if id == "" {
		return provider.Zone{}, fmt.Errorf("%w: empty zone ID", provider.ErrZoneNotFound)
	}
	out, err := p.client.GetHostedZone(ctx, &route53.GetHostedZoneInput{Id: aws.String(id)})
	if err != nil {
		return provider.Zone{}, mapErr("GetHostedZone", err)
	}
	tags, err := p.tags(ctx, id)
	if err != nil {
		return provider.Zone{}, err
	}
	return toZone(out.HostedZone, out.DelegationSet, tags), nil
}

// ListZones lists all hosted zones (without tags or name servers).
func (p *Provider) ListZones(ctx context.Context) ([]provider.Zone, error) {
	var zones []provider.Zone
	in := &route53.ListHostedZonesInput{}
	for {
		out, err := p.client.ListHostedZones(ctx, in)
		if err != nil {
			return nil, mapErr("ListHostedZones", err)
		}
		for i := range out.HostedZones {
			zones = append(zones, toZone(&out.HostedZones[i], nil, nil))
		}
		if !out.IsTruncated || out.NextMarker == nil {
			return zones, nil
		}
		in.Marker = out.NextMarker
	}
}

// kind is "private" or "public", the kind of hosted zone p manages.
func (p *Provider) kind() string {
	if p.vpc != nil {
		return "private"
	}
	return "public"
}

// zonesNamed returns the hosted zones named name of the kind p manages:
// private ones with a VPC configured, else public ones (Route 53 allows a
// public and a private zone of one name).
func (p *Provider) zonesNamed(ctx context.Context, name string) ([]types.HostedZone, error) {
	fq := dnswire.Fqdn(name)
	in := &route53.ListHostedZonesByNameInput{DNSName: aws.String(fq)}
	var res []types.HostedZone
	for {
		out, err := p.client.ListHostedZonesByName(ctx, in)
		if err != nil {
			return nil, mapErr("ListHostedZonesByName", err)
		}
		for _, hz := range out.HostedZones {
			if dnswire.Fqdn(aws.ToString(hz.Name)) != fq {
				return res, nil // sorted by name: past ours
			}
			if private := hz.Config != nil && hz.Config.PrivateZone; private == (p.vpc != nil) {
				res = append(res, hz)
			}
		}
		if !out.IsTruncated {
			return res, nil
		}
		in.DNSName, in.HostedZoneId = out.NextDNSName, out.NextHostedZoneId
	}
}

// EnsureZone finds the zone of p's kind (public, or private with a VPC
// configured; see zonesNamed) named spec.Name created for
// spec.CallerReference, or creates it. A same-name zone with another (or no)
// caller reference is ErrZoneConflict; a duplicate is never created.
func (p *Provider) EnsureZone(ctx context.Context, spec provider.ZoneSpec) (provider.Zone, error) {
	name, err := provider.ValidateName(spec.Name)
	if err != nil {
		return provider.Zone{}, err
	}
	if spec.CallerReference == "" || len(spec.CallerReference) > 128-len(retrySuffix)-20 {
		return provider.Zone{}, fmt.Errorf("%w: caller reference must be 1..%d characters", provider.ErrInvalidChange, 128-len(retrySuffix)-20)
	}
	same, err := p.zonesNamed(ctx, name)
	if err != nil {
		return provider.Zone{}, err
	}
	for _, hz := range same {
		id := stripZoneID(aws.ToString(hz.Id))
		tags, err := p.tags(ctx, id)
		if err != nil {
			return provider.Zone{}, err
		}
		ref, tagged := tags[TagCallerReference]
		if (tagged && ref == spec.CallerReference) || (!tagged && callerRef(aws.ToString(hz.CallerReference)) == spec.CallerReference) {
			// Ours (maybe created before a crash, untagged yet): finish tagging.
			if err := p.tag(ctx, id, spec, tags); err != nil {
				return provider.Zone{}, err
			}
			return p.GetZone(ctx, id)
		}
	}
	if len(same) > 0 {
		return provider.Zone{}, fmt.Errorf("%w: %s hosted zone %s already exists (ID %s) for another caller reference",
			provider.ErrZoneConflict, p.kind(), name, stripZoneID(aws.ToString(same[0].Id)))
	}
	ref := spec.CallerReference
	out, err := p.client.CreateHostedZone(ctx, p.createInput(name, ref))
	var exists *types.HostedZoneAlreadyExists
	if errors.As(err, &exists) {
		// The reference is taken: by a zone with another name (conflict), or
		// by a deleted zone (Route 53 never forgets a reference).
		zones, lerr := p.ListZones(ctx)
		if lerr != nil {
			return provider.Zone{}, lerr
		}
		for _, z := range zones {
			if z.CallerReference == spec.CallerReference {
				return provider.Zone{}, fmt.Errorf("%w: caller reference %q is used by zone %s (%s)", provider.ErrZoneConflict, spec.CallerReference, z.Name, z.ID)
			}
		}
		ref = spec.CallerReference + retrySuffix + strconv.FormatInt(time.Now().UnixNano(), 36)
		out, err = p.client.CreateHostedZone(ctx, p.createInput(name, ref))
	}
	if err != nil {
		return provider.Zone{}, mapErr("CreateHostedZone", err)
	}
	id := stripZoneID(aws.ToString(out.HostedZone.Id))
	if err := p.tag(ctx, id, spec, nil); err != nil {
		return provider.Zone{}, err
	}
	return p.GetZone(ctx, id)
}

// createInput is CreateHostedZone's input: with a VPC, a private hosted zone
// associated with it (VPC and HostedZoneConfig.PrivateZone, Route 53 API
// Reference).
func (p *Provider) createInput(name, ref string) *route53.CreateHostedZoneInput {
	in := &route53.CreateHostedZoneInput{Name: aws.String(dnswire.Fqdn(name)), CallerReference: aws.String(ref)}
	if p.vpc != nil {
		v := *p.vpc
		in.VPC = &v
		in.HostedZoneConfig = &types.HostedZoneConfig{PrivateZone: true}
	}
	return in
}

// tag adds the caller-reference tag and spec.Tags missing from have.
func (p *Provider) tag(ctx context.Context, id string, spec provider.ZoneSpec, have map[string]string) error {
	var add []types.Tag
	want := map[string]string{TagCallerReference: spec.CallerReference}
	for k, v := range spec.Tags {
		want[k] = v
	}
	for k, v := range want {
		if cur, ok := have[k]; !ok || cur != v {
			add = append(add, types.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
	}
	if len(add) == 0 {
		return nil
	}
	// Route 53 takes at most 10 tags per request.
	for len(add) > 0 {
		n := min(10, len(add))
		_, err := p.client.ChangeTagsForResource(ctx, &route53.ChangeTagsForResourceInput{ResourceType: types.TagResourceTypeHostedzone, ResourceId: aws.String(id), AddTags: add[:n]})
		if err != nil {
			return mapErr("ChangeTagsForResource", err)
		}
		add = add[n:]
	}
	return nil
}

// DeleteZone deletes every record set but the apex SOA and NS (ZoneDeletions), as one
// ChangeResourceRecordSets request, then the zone. Like ApplyChanges it never splits: under
// pkg/provider/guard (provider.ZoneDrainer) the sets are already deleted in batches within
// Route 53's limits, and this finds the zone empty.
func (p *Provider) DeleteZone(ctx context.Context, id string) error {
	id = stripZoneID(id)
	dels, err := p.ZoneDeletions(ctx, id)
	if err != nil {
		return err
	}
	if err := p.DeleteRecordSets(ctx, id, dels); err != nil {
		return err
	}
	if _, err := p.client.DeleteHostedZone(ctx, &route53.DeleteHostedZoneInput{Id: aws.String(id)}); err != nil {
		return mapErr("DeleteHostedZone", err)
	}
	return nil
}

// ZoneDeletions implements provider.ZoneDrainer: every listed record set but the apex SOA and
// NS, kept whole as Raw (a types.ResourceRecordSet, other routing policies included), each
// costing its ResourceRecord elements (at least one) and the characters of its Value elements as
// listed, what Route 53 counts (Capabilities).
func (p *Provider) ZoneDeletions(ctx context.Context, id string) ([]provider.Deletion, error) {
	id = stripZoneID(id)
	hz, err := p.client.GetHostedZone(ctx, &route53.GetHostedZoneInput{Id: aws.String(id)})
	if err != nil {
		return nil, mapErr("GetHostedZone", err)
	}
	apex := dnswire.Fqdn(aws.ToString(hz.HostedZone.Name))
	raw, err := p.listRaw(ctx, id)
	if err != nil {
		return nil, err
	}
	var dels []provider.Deletion
	for _, rr := range raw {
		name := decodeName(aws.ToString(rr.Name))
		if name == apex && (rr.Type == types.RRTypeSoa || rr.Type == types.RRTypeNs) {
			continue
		}
		d := provider.Deletion{Key: provider.RecordSetKey{Name: dnswire.Dotless(name), Type: string(rr.Type),
			SetIdentifier: aws.ToString(rr.SetIdentifier)}, Elements: max(1, len(rr.ResourceRecords)), Raw: rr}
		for _, r := range rr.ResourceRecords {
			d.ValueBytes += len(aws.ToString(r.Value))
		}
		dels = append(dels, d)
	}
	return dels, nil
}

// DeleteRecordSets implements provider.ZoneDrainer: dels (of ZoneDeletions) as DELETEs of one
// ChangeResourceRecordSets request, atomic; nothing is sent for none.
func (p *Provider) DeleteRecordSets(ctx context.Context, id string, dels []provider.Deletion) error {
	if len(dels) == 0 {
		return nil
	}
	batch := make([]types.Change, 0, len(dels))
	for _, d := range dels {
		rr, ok := d.Raw.(types.ResourceRecordSet)
		if !ok {
			return fmt.Errorf("%w: deletion of %s is not a Route 53 record set (%T)", provider.ErrInvalidChange, d.Key, d.Raw)
		}
		batch = append(batch, types.Change{Action: types.ChangeActionDelete, ResourceRecordSet: &rr})
	}
	return p.send(ctx, stripZoneID(id), batch)
}

// RecordsPerPage is ListResourceRecordSets' maxitems, so that pkg/provider/guard charges its rate
// limiter one request per page (Route 53: at most 300 record sets per page, AWS API Reference).
func (p *Provider) RecordsPerPage() int { return int(p.pageSize) }
