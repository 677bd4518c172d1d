#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
// Debian's libssl-dev (OpenSSL 3), the pipeline's only cryptography library: P-256 ECDSA, SHA-256 and
// HMAC (CryptoPrimitives) and the legacy SKAdNetwork signatures on P-192 (AttributionCrypto's
// OpenSSLEC). Only calls that OpenSSL 3 does not deprecate.
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#endif
