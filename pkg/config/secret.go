package config

import "github.com/storytold/craft-releases/pkg/secret"

// Secret is a setting that must never be printed, such as the GitHub token
// (secret.String).
type Secret = secret.String

// SecretURL is a URL that may carry a password, such as REDIS_URL
// (secret.URL).
type SecretURL = secret.URL
