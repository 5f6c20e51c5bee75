import JOSE

/// What `keygen` prints: the files it wrote, what each is for, and the `config.yaml` lines that use it.
struct KeygenReport {
    let paths: KeyPaths
    let key: JWSKey
    let account: ServiceAccountIdentity?

    func text() -> String {
        let keyID = key.keyID ?? ""
        var lines = [
            "kid:         \(keyID)",
            "private key: \(paths.privateKey) (\(key.summary), \(key.algorithm), mode 0600)",
            "public JWKS: \(paths.jwks) (mode 0644)",
        ]
        if let account {
            lines.append("service account: \(paths.serviceAccount) (\(account.email), project \(account.project), mode 0600)")
        }
        lines += ["", "Paths in config.yaml are relative to the configuration file."]
        // Fleet Engine takes RS256 only: ES256 and EdDSA keys are for session tokens, never for a backend.
        let isFleetEngineKey = key.algorithm == .rs256
        if account != nil {
            lines += [
                "", "\(paths.serviceAccount): the service-account key file a static-key backend signs with:",
                "    keys:",
                "      consumer:",
                "        - serviceAccountFile: \(paths.serviceAccount)",
            ]
        }
        lines += ["", "\(paths.jwks): the public key, to verify what this key signs."]
        if isFleetEngineKey {
            lines += [
                "  Fleet Engine tokens, in an upstream-http or file backend:",
                "    verify:",
                "      - jwksFile: \(paths.jwks)",
            ]
            if let account { lines.append("        serviceAccount: \(account.email)") }
        }
        lines += [
            "  Session tokens (tokengate mint-session --key \(paths.privateKey) --kid \(keyID) …), in a jwt client:",
            "    clients:",
            "      - name: my-app",
            "        type: jwt",
            "        jwksFile: \(paths.jwks)",
            "        issuer: https://login.example.com/",
            "        audience: tokengate",
            "        allow: { consumer: { claim: trip_ids } }",
            "", "\(paths.privateKey): the private key; keep it mode 0600 and never commit it.",
        ]
        if isFleetEngineKey, account == nil {
            lines += [
                "  In a static-key backend (or run keygen with --service-account EMAIL for a key file):",
                "    keys:",
                "      consumer:",
                "        - privateKeyFile: \(paths.privateKey)",
                "          keyId: \(keyID)",
                "          clientEmail: SERVICE-ACCOUNT@PROJECT.iam.gserviceaccount.com",
            ]
        }
        return lines.joined(separator: "\n")
    }
}
