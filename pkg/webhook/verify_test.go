package webhook_test

import (
	"testing"

	"github.com/storytold/craft-releases/pkg/webhook"
)

// TestVerify: a signature is checked against each secret; Sign makes
// GitHub's.
func TestVerify(t *testing.T) {
	// GitHub's published example (docs: "Validating webhook deliveries").
	const (
		secret  = "It's a Secret to Everybody"
		payload = "Hello, World!"
		sig     = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	)
	tests := []struct {
		name            string
		secrets         []string
		body, signature string
		want            bool
	}{
		{"GitHub's example", []string{secret}, payload, sig, true},
		{"upper-case hex", []string{secret}, payload, "sha256=757107EA0EB2509FC211221CCE984B8A37570B6D7586C22C46F4379C8B043E17", true},
		{"wrong secret", []string{"It's a secret to everybody"}, payload, sig, false},
		{"missing header", []string{secret}, payload, "", false},
		{"sha1= only", []string{secret}, payload, "sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59", false},
		{"no prefix", []string{secret}, payload, sig[len("sha256="):], false},
		{"body changed by one byte", []string{secret}, "Hello, World?", sig, false},
		{"signature changed by one digit", []string{secret}, payload, sig[:len(sig)-1] + "f", false},
		{"signature cut short", []string{secret}, payload, sig[:len(sig)-2], false},
		{"signature not hex", []string{secret}, payload, "sha256=" + string(make([]byte, 64)), false},
		{"two secrets, the first matches", []string{secret, "the next one"}, payload, sig, true},
		{"two secrets, the second matches", []string{"the next one", secret}, payload, sig, true},
		{"two secrets, neither matches", []string{"a", "b"}, payload, sig, false},
		{"no secret", nil, payload, sig, false},
		{"empty body signed", []string{secret}, "", webhook.Sign(secret, nil), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := webhook.Verify(tt.secrets, []byte(tt.body), tt.signature); got != tt.want {
				t.Errorf("Verify got %v, want %v", got, tt.want)
			}
		})
	}
	if got := webhook.Sign(secret, []byte(payload)); got != sig {
		t.Errorf("Sign got %s, want GitHub's %s", got, sig)
	}
}
