package envoy

import (
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcher "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func vh(name string, domains ...string) *route.VirtualHost {
	return &route.VirtualHost{Name: name, Domains: domains}
}

// Envoy's documented order: exact, then the longest suffix wildcard, then the longest prefix wildcard,
// then "*" (a wildcard matches at least one character).
func TestVirtualHostOrder(t *testing.T) {
	rc := &route.RouteConfiguration{VirtualHosts: []*route.VirtualHost{
		vh("star", "*"), vh("prefix", "foo.*"), vh("short-suffix", "*.com"),
		vh("long-suffix", "*.example.com"), vh("exact", "www.example.com", "www.example.com:80"),
	}}
	for authority, want := range map[string]string{
		"www.example.com":    "exact",
		"WWW.Example.com":    "exact",
		"www.example.com:80": "exact",
		"a.example.com":      "long-suffix",
		"example.com":        "short-suffix",
		"foo.bar":            "prefix",
		"foo.":               "star",
		"other":              "star",
		".example.com":       "short-suffix",
	} {
		if got := MatchVirtualHost(rc, authority, false).GetName(); got != want {
			t.Errorf("%s: got %s, want %s", authority, got, want)
		}
	}
	if got := MatchVirtualHost(rc, "www.example.com:1234", true).GetName(); got != "exact" {
		t.Errorf("port stripped: got %s", got)
	}
	if got := MatchVirtualHost(rc, "www.example.com:1234", false).GetName(); got != "star" {
		t.Errorf("port kept: got %s", got)
	}
}

func regexRoute(name, pattern string) *route.Route {
	return &route.Route{Name: name, Match: &route.RouteMatch{PathSpecifier: &route.RouteMatch_SafeRegex{
		SafeRegex: &matcher.RegexMatcher{Regex: pattern},
	}}}
}

func TestRouteMatching(t *testing.T) {
	prefix := &route.Route{Name: "prefix", Match: &route.RouteMatch{PathSpecifier: &route.RouteMatch_Prefix{Prefix: "/api"}}}
	v := &route.VirtualHost{Routes: []*route.Route{
		// A regex must match the whole path: /v1/xyz is not /v1 followed by anything.
		regexRoute("regex", "/v[0-9]+"),
		{Name: "header", Match: &route.RouteMatch{
			PathSpecifier: &route.RouteMatch_Prefix{Prefix: "/h"},
			Headers: []*route.HeaderMatcher{{Name: "x-env", HeaderMatchSpecifier: &route.HeaderMatcher_StringMatch{
				StringMatch: &matcher.StringMatcher{MatchPattern: &matcher.StringMatcher_Exact{Exact: "prod"}},
			}, InvertMatch: true}},
		}},
		{Name: "query", Match: &route.RouteMatch{
			PathSpecifier:   &route.RouteMatch_Path{Path: "/q"},
			QueryParameters: []*route.QueryParameterMatcher{{Name: "a", QueryParameterMatchSpecifier: &route.QueryParameterMatcher_PresentMatch{PresentMatch: true}}},
		}},
		{Name: "insensitive", Match: &route.RouteMatch{
			PathSpecifier: &route.RouteMatch_Prefix{Prefix: "/CASE"}, CaseSensitive: wrapperspb.Bool(false),
		}},
		prefix,
	}}
	for _, c := range []struct {
		path    string
		headers map[string]string
		want    string
	}{
		{"/v1", nil, "regex"},
		{"/v1/xyz", nil, ""},
		{"/v12?x=1", nil, "regex"},
		// An inverted value matcher does not match a missing header.
		{"/h", nil, ""},
		{"/h", map[string]string{"x-env": "dev"}, "header"},
		{"/h", map[string]string{"x-env": "prod"}, ""},
		{"/q?a=1", nil, "query"},
		{"/q?b=1", nil, ""},
		{"/case/x", nil, "insensitive"},
		{"/apix", nil, "prefix"},
	} {
		r := Request{Path: c.path, Method: "GET", Headers: c.headers}
		got, err := MatchRoute(v, r)
		if err != nil {
			t.Fatal(err)
		}
		if got.GetName() != c.want {
			t.Errorf("%s %v: got %q, want %q", c.path, c.headers, got.GetName(), c.want)
		}
	}
}

func TestRewritesAndRedirects(t *testing.T) {
	r := Request{Authority: "a.com:8080", Path: "/api/x/api?y=1", Method: "GET", Scheme: "http"}
	rt := &route.Route{
		Match: &route.RouteMatch{PathSpecifier: &route.RouteMatch_Prefix{Prefix: "/api"}},
		Action: &route.Route_Route{Route: &route.RouteAction{
			ClusterSpecifier: &route.RouteAction_Cluster{Cluster: "c"},
			PrefixRewrite:    "/v2",
		}},
	}
	if a, _ := ActionOf(rt, r); a.Path != "/v2/x/api?y=1" {
		t.Errorf("prefix rewrite: %s", a.Path)
	}
	rt.GetRoute().PrefixRewrite = ""
	rt.GetRoute().RegexRewrite = &matcher.RegexMatchAndSubstitute{Pattern: &matcher.RegexMatcher{Regex: "api"}, Substitution: "v3"}
	// Every match is replaced, the query kept.
	if a, _ := ActionOf(rt, r); a.Path != "/v3/x/v3?y=1" {
		t.Errorf("regex rewrite: %s", a.Path)
	}
	redirect := &route.Route{
		Match:  &route.RouteMatch{PathSpecifier: &route.RouteMatch_Prefix{Prefix: "/"}},
		Action: &route.Route_Redirect{Redirect: &route.RedirectAction{SchemeRewriteSpecifier: &route.RedirectAction_HttpsRedirect{HttpsRedirect: true}}},
	}
	if a, _ := ActionOf(redirect, Request{Authority: "a.com", Path: "/p?q", Scheme: "http"}); a.Redirect != "https://a.com/p?q" || a.RedirectCode != 301 {
		t.Errorf("https redirect: %s %d", a.Redirect, a.RedirectCode)
	}
}

func chain(name string, m *listener.FilterChainMatch) *listener.FilterChain {
	return &listener.FilterChain{Name: name, FilterChainMatch: m}
}

// Once the most specific destination port matches, a chain without a port is no fallback.
func TestFilterChainNoBacktracking(t *testing.T) {
	l := &listener.Listener{Name: "l", FilterChains: []*listener.FilterChain{
		chain("port-tls", &listener.FilterChainMatch{DestinationPort: wrapperspb.UInt32(80), TransportProtocol: "tls"}),
		chain("any", &listener.FilterChainMatch{}),
	}, DefaultFilterChain: chain("default", nil)}
	fc, err := MatchFilterChain(l, Connection{DestinationIP: "10.0.0.1", Port: 80})
	if err != nil || fc.GetName() != "default" {
		t.Errorf("plaintext to port 80: got %v, %v", fc.GetName(), err)
	}
	fc, _ = MatchFilterChain(l, Connection{DestinationIP: "10.0.0.1", Port: 81})
	if fc.GetName() != "any" {
		t.Errorf("port 81: got %v", fc.GetName())
	}
}

func TestFilterChainServerNamesAndPrefixes(t *testing.T) {
	l := &listener.Listener{Name: "l", FilterChains: []*listener.FilterChain{
		chain("exact", &listener.FilterChainMatch{ServerNames: []string{"www.example.com"}}),
		chain("wild", &listener.FilterChainMatch{ServerNames: []string{"*.example.com"}}),
		chain("none", &listener.FilterChainMatch{}),
		chain("narrow", &listener.FilterChainMatch{PrefixRanges: []*core.CidrRange{{AddressPrefix: "10.1.0.0", PrefixLen: wrapperspb.UInt32(16)}}}),
	}}
	for _, c := range []struct {
		ip, sni, want string
	}{
		{"10.0.0.1", "www.example.com", "exact"},
		{"10.0.0.1", "a.example.com", "wild"},
		{"10.0.0.1", "example.com", "none"},
		{"10.1.2.3", "www.example.com", "narrow"},
	} {
		fc, err := MatchFilterChain(l, Connection{DestinationIP: c.ip, Port: 443, TLS: c.sni != "", SNI: c.sni})
		if err != nil || fc.GetName() != c.want {
			t.Errorf("%s %s: got %v, %v; want %s", c.ip, c.sni, fc.GetName(), err, c.want)
		}
	}
}

func TestRBAC(t *testing.T) {
	principal := func(p string) *rbacv3.Principal {
		return &rbacv3.Principal{Identifier: &rbacv3.Principal_Authenticated_{Authenticated: &rbacv3.Principal_Authenticated{
			PrincipalName: &matcher.StringMatcher{MatchPattern: &matcher.StringMatcher_Exact{Exact: p}},
		}}}
	}
	get := &rbacv3.Permission{Rule: &rbacv3.Permission_Header{Header: &route.HeaderMatcher{
		Name: ":method", HeaderMatchSpecifier: &route.HeaderMatcher_StringMatch{StringMatch: &matcher.StringMatcher{MatchPattern: &matcher.StringMatcher_Exact{Exact: "GET"}}},
	}}}
	rules := &rbacv3.RBAC{Action: rbacv3.RBAC_ALLOW, Policies: map[string]*rbacv3.Policy{
		"ns[a]-policy[b]-rule[0]": {Permissions: []*rbacv3.Permission{get}, Principals: []*rbacv3.Principal{principal("spiffe://cluster.local/ns/a/sa/x")}},
	}}
	r := &Request{Method: "GET", Path: "/"}
	if d, _ := Evaluate(rules, r, Peer{Principal: "spiffe://cluster.local/ns/a/sa/x"}); !d.Allowed || d.Policy == "" {
		t.Errorf("allowed caller: %+v", d)
	}
	if d, _ := Evaluate(rules, r, Peer{}); d.Allowed {
		t.Errorf("no certificate: %+v", d)
	}
	if d, _ := Evaluate(rules, &Request{Method: "POST", Path: "/"}, Peer{Principal: "spiffe://cluster.local/ns/a/sa/x"}); d.Allowed {
		t.Errorf("other method: %+v", d)
	}
	rules.Action = rbacv3.RBAC_DENY
	if d, _ := Evaluate(rules, r, Peer{Principal: "spiffe://cluster.local/ns/a/sa/x"}); d.Allowed {
		t.Errorf("deny: %+v", d)
	}
	// On a connection (no request), a header permission never matches.
	if d, _ := Evaluate(rules, nil, Peer{Principal: "spiffe://cluster.local/ns/a/sa/x"}); !d.Allowed {
		t.Errorf("deny on TCP: %+v", d)
	}
}
