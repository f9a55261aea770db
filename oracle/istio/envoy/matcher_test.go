package envoy

import (
	"testing"

	xdscore "github.com/cncf/xds/go/xds/core/v3"
	xdsmatcher "github.com/cncf/xds/go/xds/type/matcher/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	network "github.com/envoyproxy/go-control-plane/envoy/extensions/matching/common_inputs/network/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func typed(name string, m proto.Message) *xdscore.TypedExtensionConfig {
	a, _ := anypb.New(m)
	return &xdscore.TypedExtensionConfig{Name: name, TypedConfig: a}
}

func chainAction(name string) *xdsmatcher.Matcher_OnMatch {
	return &xdsmatcher.Matcher_OnMatch{OnMatch: &xdsmatcher.Matcher_OnMatch_Action{Action: typed(name, wrapperspb.String(name))}}
}

func nested(m *xdsmatcher.Matcher) *xdsmatcher.Matcher_OnMatch {
	return &xdsmatcher.Matcher_OnMatch{OnMatch: &xdsmatcher.Matcher_OnMatch_Matcher{Matcher: m}}
}

func exactTree(input proto.Message, entries map[string]*xdsmatcher.Matcher_OnMatch, noMatch *xdsmatcher.Matcher_OnMatch) *xdsmatcher.Matcher {
	return &xdsmatcher.Matcher{
		MatcherType: &xdsmatcher.Matcher_MatcherTree_{MatcherTree: &xdsmatcher.Matcher_MatcherTree{
			Input:    typed("input", input),
			TreeType: &xdsmatcher.Matcher_MatcherTree_ExactMatchMap{ExactMatchMap: &xdsmatcher.Matcher_MatcherTree_MatchMap{Map: entries}},
		}},
		OnNoMatch: noMatch,
	}
}

func ipRange(cidr string, bits uint32, exclusive bool, on *xdsmatcher.Matcher_OnMatch) *xdsmatcher.IPMatcher_IPRangeMatcher {
	return &xdsmatcher.IPMatcher_IPRangeMatcher{
		Ranges:    []*xdscore.CidrRange{{AddressPrefix: cidr, PrefixLen: wrapperspb.UInt32(bits)}},
		OnMatch:   on,
		Exclusive: exclusive,
	}
}

func ipTree(ranges ...*xdsmatcher.IPMatcher_IPRangeMatcher) *xdsmatcher.Matcher {
	return &xdsmatcher.Matcher{MatcherType: &xdsmatcher.Matcher_MatcherTree_{MatcherTree: &xdsmatcher.Matcher_MatcherTree{
		Input:    typed("ip", &network.DestinationIPInput{}),
		TreeType: &xdsmatcher.Matcher_MatcherTree_CustomMatch{CustomMatch: typed("ip", &xdsmatcher.IPMatcher{RangeMatchers: ranges})},
	}}}
}

func matcherListener(m *xdsmatcher.Matcher, names ...string) *listener.Listener {
	l := &listener.Listener{Name: "l", FilterChainMatcher: m}
	for _, n := range names {
		l.FilterChains = append(l.FilterChains, &listener.FilterChain{Name: n})
	}
	return l
}

func chainName(t *testing.T, l *listener.Listener, c Connection) string {
	t.Helper()
	fc, err := MatchFilterChain(l, c)
	if err != nil {
		t.Fatal(err)
	}
	return fc.GetName()
}

// The most specific range is tried first; when its nested matcher matches nothing, a less specific range is
// tried only if it is not exclusive.
func TestIPMatcherSpecificityAndExclusive(t *testing.T) {
	port80 := exactTree(&network.DestinationPortInput{}, map[string]*xdsmatcher.Matcher_OnMatch{"80": chainAction("vip-80")}, nil)
	l := matcherListener(ipTree(
		ipRange("10.0.0.0", 8, false, chainAction("wide")),
		ipRange("10.0.0.5", 32, false, nested(port80)),
	), "vip-80", "wide")
	if got := chainName(t, l, Connection{DestinationIP: "10.0.0.5", Port: 80}); got != "vip-80" {
		t.Fatalf("got %q, want vip-80", got)
	}
	if got := chainName(t, l, Connection{DestinationIP: "10.0.0.5", Port: 81}); got != "wide" {
		t.Fatalf("port 81: got %q, want the non-exclusive wider range", got)
	}
	exclusive := matcherListener(ipTree(
		ipRange("10.0.0.0", 8, true, chainAction("wide")),
		ipRange("10.0.0.5", 32, false, nested(port80)),
	), "vip-80", "wide")
	if got := chainName(t, exclusive, Connection{DestinationIP: "10.0.0.5", Port: 81}); got != "" {
		t.Fatalf("port 81 with an exclusive wider range: got %q, want no chain", got)
	}
	if got := chainName(t, exclusive, Connection{DestinationIP: "10.9.9.9", Port: 81}); got != "wide" {
		t.Fatalf("another address: got %q, want wide", got)
	}
}

// The application protocols an inspector found are read quoted; no protocol found takes on_no_match.
func TestApplicationProtocolInput(t *testing.T) {
	m := exactTree(&network.ApplicationProtocolInput{}, map[string]*xdsmatcher.Matcher_OnMatch{
		"'http/1.1'": chainAction("http"),
		"'h2c'":      chainAction("http"),
	}, chainAction("tcp"))
	l := matcherListener(m, "http", "tcp")
	for c, want := range map[*Connection]string{
		{HTTP: "http/1.1"}: "http",
		{HTTP: "h2c"}:      "http",
		{}:                 "tcp",
	} {
		if got := chainName(t, l, *c); got != want {
			t.Fatalf("%+v: got %q, want %q", *c, got, want)
		}
	}
}

// A listener whose matcher names nothing uses its default filter chain.
func TestMatcherDefaultChain(t *testing.T) {
	l := matcherListener(exactTree(&network.DestinationPortInput{}, map[string]*xdsmatcher.Matcher_OnMatch{"80": chainAction("c")}, nil), "c")
	l.DefaultFilterChain = &listener.FilterChain{Name: "default"}
	if got := chainName(t, l, Connection{DestinationIP: "1.2.3.4", Port: 9}); got != "default" {
		t.Fatalf("got %q, want default", got)
	}
}
