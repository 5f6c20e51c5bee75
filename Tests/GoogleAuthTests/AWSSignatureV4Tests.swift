import GoogleAuth
import Testing

/// The signer against AWS's published Signature Version 4 test suite (every request signed by AKIDEXAMPLE with the
/// secret below at 20150830T123600Z for us-east-1, service "service"): the same vectors as
/// Tests/Peers/google/aws_sigv4.py's tests, which copy the expected values from the suite as AWS ships it.
@Suite struct AWSSignatureV4Tests {
    static let credentials = AWSSignatureV4.Credentials(
        accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", sessionToken: nil)
    static let date = "20150830T123600Z"
    static let base: [(name: String, value: String)] = [("host", "example.amazonaws.com"), ("x-amz-date", date)]
    static let form: [(name: String, value: String)] = [("content-type", "application/x-www-form-urlencoded")]

    static func sign(
        _ method: String, _ url: String, _ headers: [(name: String, value: String)], _ payload: String = "", service: String = "service"
    ) throws -> AWSSignatureV4.Signed {
        try AWSSignatureV4.sign(
            method: method, url: url, headers: headers, payload: Array(payload.utf8), credentials: credentials, region: "us-east-1",
            service: service, amzDate: date)
    }

    @Test(
        arguments: [
            (
                "get-vanilla", "GET", "https://example.amazonaws.com/", [], "", "host;x-amz-date",
                "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
            ),
            (
                "get-vanilla-query-order-key-case", "GET", "https://example.amazonaws.com/?Param2=value2&Param1=value1", [], "",
                "host;x-amz-date", "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"
            ),
            (
                "get-vanilla-query-unreserved", "GET",
                "https://example.amazonaws.com/?-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz=-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
                [], "", "host;x-amz-date", "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197"
            ),
            (
                "get-vanilla-utf8-query", "GET", "https://example.amazonaws.com/?%E1%88%B4=bar", [], "", "host;x-amz-date",
                "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"
            ),
            (
                "get-utf8", "GET", "https://example.amazonaws.com/%E1%88%B4", [], "", "host;x-amz-date",
                "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"
            ),
            (
                "get-unreserved", "GET", "https://example.amazonaws.com/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
                [], "", "host;x-amz-date", "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"
            ),
            (
                "get-header-value-trim", "GET", "https://example.amazonaws.com/", [("My-Header1", " value1"), ("My-Header2", " \"a   b   c\"")], "",
                "host;my-header1;my-header2;x-amz-date", "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"
            ),
            (
                "get-header-value-order", "GET", "https://example.amazonaws.com/",
                [("My-Header1", "value4"), ("My-Header1", "value1"), ("My-Header1", "value3"), ("My-Header1", "value2")], "",
                "host;my-header1;x-amz-date", "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01"
            ),
            (
                "post-vanilla", "POST", "https://example.amazonaws.com/", [], "", "host;x-amz-date",
                "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"
            ),
            (
                "post-vanilla-query", "POST", "https://example.amazonaws.com/?Param1=value1", [], "", "host;x-amz-date",
                "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"
            ),
            (
                "post-vanilla-query-nonunreserved", "POST",
                "https://example.amazonaws.com/?%40%23%24%25%5E=&%2B=%2F%2C%3F%3E%3C%60%22%3B%3A%5C%7C%5D%5B%7B%7D", [], "",
                "host;x-amz-date", "66c82657c86e26fb25238d0e69f011edc4c6df5ae71119d7cb98ed9b87393c1e"
            ),
            (
                "post-header-key-sort", "POST", "https://example.amazonaws.com/", [("My-Header1", "value1")], "",
                "host;my-header1;x-amz-date", "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c"
            ),
            (
                "post-header-value-case", "POST", "https://example.amazonaws.com/", [("My-Header1", "VALUE1")], "",
                "host;my-header1;x-amz-date", "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d"
            ),
            (
                "post-x-www-form-urlencoded", "POST", "https://example.amazonaws.com/", form, "Param1=value1",
                "content-type;host;x-amz-date", "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"
            ),
            (
                "post-x-www-form-urlencoded-parameters", "POST", "https://example.amazonaws.com/",
                [("content-type", "application/x-www-form-urlencoded; charset=utf8")], "Param1=value1",
                "content-type;host;x-amz-date", "1a72ec8f64bd914b0e42e42607c7fbce7fb2c7465f63e3092b3b0d39fa77a6fe"
            ),
        ] as [(String, String, String, [(name: String, value: String)], String, String, String)])
    func reproducesTheAWSTestSuite(
        _ name: String, method: String, url: String, extra: [(name: String, value: String)], payload: String, signedHeaders: String,
        signature: String
    ) throws {
        let signed = try Self.sign(method, url, Self.base + extra, payload)
        #expect(
            signed.authorization
                == "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
                + "SignedHeaders=\(signedHeaders), Signature=\(signature)", "\(name)")
    }

    /// The suite's .creq and .sts files of get-vanilla, and the .creq of post-x-www-form-urlencoded.
    @Test func canonicalRequestsAndStringToSignOfTheSuite() throws {
        let vanilla = try Self.sign("GET", "https://example.amazonaws.com/", Self.base)
        #expect(
            vanilla.canonicalRequest
                == "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
                + "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            vanilla.stringToSign
                == "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
                + "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63")
        let form = try Self.sign("POST", "https://example.amazonaws.com/", Self.form + Self.base, "Param1=value1")
        #expect(
            form.canonicalRequest
                == "POST\n/\n\ncontent-type:application/x-www-form-urlencoded\nhost:example.amazonaws.com\n"
                + "x-amz-date:20150830T123600Z\n\ncontent-type;host;x-amz-date\n"
                + "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e")
    }

    /// AWS's documentation example: IAM ListUsers, same secret and date.
    @Test func theIAMExampleOfAWSDocumentation() throws {
        let signed = try Self.sign(
            "GET", "https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08",
            [("content-type", "application/x-www-form-urlencoded; charset=utf-8"), ("host", "iam.amazonaws.com"), ("x-amz-date", Self.date)],
            service: "iam")
        #expect(signed.signature == "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7")
    }

    /// A signature is of everything signed: another secret, payload, header value or region changes it.
    @Test func anyChangeChangesTheSignature() throws {
        let original = try Self.sign("POST", "https://example.amazonaws.com/", Self.base + [("x-amz-security-token", "t")])
        let other = AWSSignatureV4.Credentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "another", sessionToken: nil)
        let variants = [
            try AWSSignatureV4.sign(
                method: "POST", url: "https://example.amazonaws.com/", headers: Self.base + [("x-amz-security-token", "t")], payload: [],
                credentials: other, region: "us-east-1", service: "service", amzDate: Self.date),
            try Self.sign("POST", "https://example.amazonaws.com/", Self.base + [("x-amz-security-token", "t")], "x"),
            try Self.sign("POST", "https://example.amazonaws.com/", Self.base + [("x-amz-security-token", "u")]),
            try AWSSignatureV4.sign(
                method: "POST", url: "https://example.amazonaws.com/", headers: Self.base + [("x-amz-security-token", "t")], payload: [],
                credentials: Self.credentials, region: "eu-west-1", service: "service", amzDate: Self.date),
        ]
        #expect(Set(variants.map(\.signature)).count == 4 && !variants.map(\.signature).contains(original.signature))
        #expect(!"\(Self.credentials)".contains("wJalr"))
    }

    @Test(
        arguments: [
            (1_440_938_160, "20150830T123600Z"), (0, "19700101T000000Z"), (951_868_799, "20000229T235959Z"),
            (4_102_444_799, "20991231T235959Z"),
        ] as [(Int64, String)])
    func amzDateIsUTCBasicFormat(epochSeconds: Int64, expected: String) {
        #expect(AWSSignatureV4.amzDate(epochSeconds: epochSeconds) == expected)
    }
}
