#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
// Debian's libssl-dev (OpenSSL 3): only for legacy SKAdNetwork signatures on P-192, which swift-crypto
// does not support. Everything else uses swift-crypto.
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#endif
