package aws

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/aws/smithy-go"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

func TestMapErr(t *testing.T) {
	api := func(code string) error { return &smithy.GenericAPIError{Code: code, Message: "m"} }
	for _, tc := range []struct {
		err  error
		want error
	}{
		{api("NoSuchHostedZone"), provider.ErrZoneNotFound},
		{api("Throttling"), provider.ErrThrottled},
		{api("PriorRequestNotComplete"), provider.ErrThrottled},
		{api("AccessDenied"), provider.ErrInvalidCredentials},
		{api("InvalidSignatureException"), provider.ErrInvalidCredentials},
		{api("SignatureDoesNotMatch"), provider.ErrInvalidCredentials},
		{api("InvalidInput"), provider.ErrInvalidChange},
		{&types.InvalidChangeBatch{Messages: []string{"Tried to create resource record set [a.test.] type A but it already exists"}}, provider.ErrConflict},
		{&types.InvalidChangeBatch{Messages: []string{"Tried to delete resource record set [a.test.] type A but it was not found"}}, provider.ErrConflict},
		{&types.InvalidChangeBatch{Messages: []string{"Tried to delete resource record set [a.test.] type A but the values provided do not match the current values"}}, provider.ErrConflict},
		{&types.InvalidChangeBatch{Messages: []string{"RRSet with DNS name b.test. is not permitted in zone a.test."}}, provider.ErrInvalidChange},
	} {
		if got := mapErr("Op", tc.err); !errors.Is(got, tc.want) {
			t.Errorf("mapErr(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestTXTEncodeDecodeRoundTrip(t *testing.T) {
	for _, v := range []string{"plain", `say "hi"`, `back\slash`, "ütf-8 \x00\x7f", "", string(make([]byte, 600))} {
		enc := encodeValue("TXT", v)
		if got := decodeTXT(enc); got != v {
			t.Errorf("decodeTXT(encodeValue(%q)) = %q (encoded %q)", v, got, enc)
		}
	}
	if got := decodeName(`\052.wild.example.test.`); got != "*.wild.example.test." {
		t.Errorf("decodeName = %q", got)
	}
	for rtype, c := range map[string][2]string{
		"MX": {"10 mail.example.net", "10 mail.example.net."}, "SRV": {"0 5 5060 sip.example.net", "0 5 5060 sip.example.net."},
		"CNAME": {"a.example.net", "a.example.net."}, "CAA": {`0 issue "x.org"`, `0 issue "x.org"`},
	} {
		if got := encodeValue(rtype, c[0]); got != c[1] {
			t.Errorf("encodeValue(%s, %q) = %q, want %q", rtype, c[0], got, c[1])
		}
	}
}
