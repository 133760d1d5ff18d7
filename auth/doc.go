// Package auth issues and verifies the broker's signed bearer tokens: JWTs
// signed with the daemon's Ed25519 keys, each naming a subject and the
// rights it carries (package rights).
//
//	is, err := auth.Open(auth.Options{Dir: filepath.Join(state, "auth")})
//	r := rights.Rights{{Servers: []string{"demo"}, Roots: []string{"/srv/src"}}}
//	tok, info, err := is.Mint(auth.Grant{Subject: "ci", Rights: r, TTL: 24 * time.Hour})
//	claims, err := is.Verify(tok) // errors.Is(err, auth.ErrExpired), …
//	is.Revoke(info.ID)
//	is.Rotate() // a new current key; the old one verifies until its tokens expire
//
// # Keys and identity
//
// The issuer's state is one file, tokens.json (mode 0600, in a 0700
// directory), replaced atomically on every change: the broker's identity,
// its keys (each with a kid) and the ledger of the tokens it minted. The
// identity ("mcpx:<hostname>/<random>") is made once and kept, so it is
// stable across restarts and two brokers never accept each other's tokens
// even on one hostname; it is both the issuer and the audience of every
// token.
//
// # Verification
//
// Verify pins the EdDSA algorithm (so "none" and HS256 signed with a
// public key's bytes are refused), finds the key by the header's kid,
// requires exp, checks iss, aud, nbf and iat with no leeway (the broker
// verifies only tokens it minted, by its own clock: no clocks to disagree),
// and then
// requires the token's jti to be in the ledger and not revoked: a token
// the ledger does not know is refused, so losing the state file revokes
// every token. Its errors say only which rule refused the token (see
// [ErrInvalid] and friends), never anything about keys.
//
// # Rotation and retirement
//
// Rotate makes a new key current; the keys before it keep verifying the
// tokens they signed until the last of them expires (a key records the
// latest exp it signed), and are then retired: dropped from the file the
// next time it is written, after which their tokens' kid is unknown. A
// token cannot outlive [MaxTTL], so no key lingers longer. Expired tokens
// leave the ledger the same way.
//
// # Minters
//
// The ledger records who minted each token (Minter), and a token dies with
// its minter's rights. The owner's tokens answer to nobody. A token minted
// with a token is valid only while that token is (recursively: revoking or
// outliving one ends every token minted under it). A tailnet caller's
// grant is known only when it calls, so the issuer keeps its rights as last
// seen (Issuer.Seen, on each of its requests, written only when they
// change): at each use its token is refused (ErrMinter) while those rights
// lack admin or do not cover the token's, and a minter seen without admin
// (its grant taken away) revokes its tokens for good. Subjects naming the
// broker's built-in callers (loopback, local:…, anonymous) are refused.
//
// # Rights
//
// A token carries its rights in the claim "rights", in package rights'
// JSON form, and its ledger entry the same; a rule's tool patterns
// ("tools") are checked when it is minted (rights.CheckPattern) and, for a
// tailnet minter, covered by its last-seen rules' patterns at each use
// (rights.Rights.Covers). Tokens minted before that, and
// their ledger entries, hold one rule's members at the top level
// (servers, roots, scopes, admin, projectConfig); they are read as that
// one rule, nothing granted by omission but scopes, so existing state
// files and tokens keep working.
package auth
