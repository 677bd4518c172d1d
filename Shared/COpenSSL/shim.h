#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
// Debian's libssl-dev (OpenSSL 3), the pipeline's only cryptography library: P-256 ECDSA, SHA-256 and
// HMAC (CryptoPrimitives), the legacy SKAdNetwork signatures on P-192 (AttributionCrypto's
// OpenSSLEC) and TLS clients (TLSClient). Only calls that OpenSSL 3 does not deprecate.
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

// Macros in OpenSSL's headers, which Swift cannot call: the same calls as functions.
static inline long copenssl_set_server_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
static inline long copenssl_require_tls12(SSL_CTX *context) {
    return SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
}
#endif
