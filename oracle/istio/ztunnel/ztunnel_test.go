package ztunnel

import (
	"net/netip"
	"testing"

	"istio.io/istio/pkg/workloadapi/security"
)

func exact(v string) *security.StringMatch {
	return &security.StringMatch{MatchType: &security.StringMatch_Exact{Exact: v}}
}

func block(cidr string) *security.Address {
	p := netip.MustParsePrefix(cidr)
	return &security.Address{Address: p.Addr().AsSlice(), Length: uint32(p.Bits())}
}

// policy has one group of the given rules (each rule a list of alternative matches).
func policy(name string, action security.Action, rules ...[]*security.Match) *security.Authorization {
	g := &security.Group{}
	for _, r := range rules {
		g.Rules = append(g.Rules, &security.Rules{Matches: r})
	}
	return &security.Authorization{Name: name, Namespace: "ns", Action: action, Groups: []*security.Group{g}}
}

func conn(t *testing.T, principal string) Conn {
	c, err := NewConn("10.0.0.1", "10.0.0.2", 8080, principal)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const client = "spiffe://cluster.local/ns/app/sa/client"

func TestNoPolicyAllows(t *testing.T) {
	if v := Decide(nil, conn(t, "")); !v.Allowed {
		t.Fatal("no policy: the connection is allowed")
	}
}

// An ALLOW policy without groups admits no one (allow-nothing); a DENY without groups denies nothing.
func TestPoliciesWithoutRules(t *testing.T) {
	nothing := &security.Authorization{Name: "nothing", Namespace: "ns", Action: security.Action_ALLOW}
	if v := Decide([]*security.Authorization{nothing}, conn(t, client)); v.Allowed {
		t.Fatal("allow-nothing allowed a connection")
	}
	never := &security.Authorization{Name: "never", Namespace: "ns", Action: security.Action_DENY}
	if v := Decide([]*security.Authorization{never}, conn(t, client)); !v.Allowed {
		t.Fatal("a DENY without rules denied")
	}
}

// A rule with no match holds; a match with no field holds for nothing.
func TestEmptyRuleAndEmptyMatch(t *testing.T) {
	all := policy("all", security.Action_ALLOW, nil)
	if v := Decide([]*security.Authorization{all}, conn(t, "")); !v.Allowed {
		t.Fatal("a rule without matches should hold")
	}
	empty := policy("empty", security.Action_ALLOW, []*security.Match{{}})
	if v := Decide([]*security.Authorization{empty}, conn(t, client)); v.Allowed {
		t.Fatal("a match without fields should hold for nothing")
	}
}

// DENY first, whatever ALLOW says; every matching DENY is named.
func TestDenyWins(t *testing.T) {
	allow := policy("allow", security.Action_ALLOW, nil)
	deny1 := policy("deny1", security.Action_DENY, []*security.Match{{DestinationPorts: []uint32{8080}}})
	deny2 := policy("deny2", security.Action_DENY, []*security.Match{{Namespaces: []*security.StringMatch{exact("app")}}})
	v := Decide([]*security.Authorization{allow, deny1, deny2}, conn(t, client))
	if v.Allowed || len(v.Denying) != 2 {
		t.Fatalf("got %+v, want denied by deny1 and deny2", v)
	}
}

// Principals are matched without the scheme; no identity matches no principal, and a negated principal
// holds for a connection without identity.
func TestPrincipals(t *testing.T) {
	p := policy("p", security.Action_ALLOW, []*security.Match{{Principals: []*security.StringMatch{exact("cluster.local/ns/app/sa/client")}}})
	if !Decide([]*security.Authorization{p}, conn(t, client)).Allowed {
		t.Fatal("the client's principal should match")
	}
	if Decide([]*security.Authorization{p}, conn(t, "")).Allowed {
		t.Fatal("no identity matched a principal")
	}
	presence := policy("any", security.Action_ALLOW, []*security.Match{{Principals: []*security.StringMatch{{MatchType: &security.StringMatch_Presence{}}}}})
	if Decide([]*security.Authorization{presence}, conn(t, "")).Allowed {
		t.Fatal("presence matched no identity")
	}
	not := policy("not", security.Action_DENY, []*security.Match{{NotPrincipals: []*security.StringMatch{exact("cluster.local/ns/app/sa/client")}}})
	if Decide([]*security.Authorization{not}, conn(t, "")).Allowed {
		t.Fatal("a connection without identity is not the client: the DENY should hold")
	}
	if !Decide([]*security.Authorization{not}, conn(t, client)).Allowed {
		t.Fatal("the client is excluded from the DENY")
	}
}

// Within a field any value; across fields all; across a group's rules all; across groups any.
func TestCombination(t *testing.T) {
	both := policy("both", security.Action_ALLOW,
		[]*security.Match{{SourceIps: []*security.Address{block("192.0.2.0/24"), block("10.0.0.0/8")}}},
		[]*security.Match{{DestinationPorts: []uint32{9999}}, {DestinationPorts: []uint32{8080}}},
	)
	if !Decide([]*security.Authorization{both}, conn(t, "")).Allowed {
		t.Fatal("source in 10/8 and port 8080 should match")
	}
	wrongPort := policy("wrong", security.Action_ALLOW,
		[]*security.Match{{SourceIps: []*security.Address{block("10.0.0.0/8")}, DestinationPorts: []uint32{9999}}},
	)
	if Decide([]*security.Authorization{wrongPort}, conn(t, "")).Allowed {
		t.Fatal("the port differs: the match should not hold")
	}
	twoGroups := &security.Authorization{Name: "g", Namespace: "ns", Action: security.Action_ALLOW, Groups: []*security.Group{
		{Rules: []*security.Rules{{Matches: []*security.Match{{DestinationPorts: []uint32{1}}}}}},
		{Rules: []*security.Rules{{Matches: []*security.Match{{NotSourceIps: []*security.Address{block("192.0.2.0/24")}}}}}},
	}}
	if !Decide([]*security.Authorization{twoGroups}, conn(t, "")).Allowed {
		t.Fatal("the second group holds")
	}
}

func TestDryRunIsNotEnforced(t *testing.T) {
	deny := policy("dry", security.Action_DENY, nil)
	deny.DryRun = true
	if !Decide([]*security.Authorization{deny}, conn(t, client)).Allowed {
		t.Fatal("a dry-run DENY denied")
	}
}

func TestNewConnRejectsBadPrincipal(t *testing.T) {
	if _, err := NewConn("10.0.0.1", "10.0.0.2", 80, "cluster.local/ns/a/sa/b"); err == nil {
		t.Fatal("a principal without spiffe:// was accepted")
	}
}
