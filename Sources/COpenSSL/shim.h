#ifndef TOKENGATE_COPENSSL_SHIM_H
#define TOKENGATE_COPENSSL_SHIM_H

#include <openssl/opensslv.h>
#if OPENSSL_VERSION_MAJOR < 3
#error "TokenGate needs OpenSSL 3 (Debian: apt-get install libssl-dev)"
#endif

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/decoder.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/obj_mac.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

// Macros Swift cannot import, turned into functions. Nothing else lives here.
static inline void tokengate_OPENSSL_free(void *pointer) { OPENSSL_free(pointer); }

static inline long tokengate_BIO_get_mem_data(BIO *bio, char **data) { return BIO_get_mem_data(bio, data); }

// Selection masks for EVP_PKEY_fromdata and OSSL_DECODER: OR-ed macros that Swift does not import.
static inline int tokengate_EVP_PKEY_KEYPAIR(void) { return EVP_PKEY_KEYPAIR; }
static inline int tokengate_EVP_PKEY_PUBLIC_KEY(void) { return EVP_PKEY_PUBLIC_KEY; }

#endif
