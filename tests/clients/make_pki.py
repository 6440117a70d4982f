"""Makes a throwaway certificate authority, a server certificate for localhost/127.0.0.1 and a
client certificate with CN `svc-orders`, as PEM files in the folder given (for
scripts/client-tests.sh's TLS server)."""

import datetime
import ipaddress
import sys
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def build(subject, issuer, public_key, signing_key, ca=False, usage=None, sans=None):
    now = datetime.datetime.now(datetime.timezone.utc)
    b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
         .public_key(public_key).serial_number(x509.random_serial_number())
         .not_valid_before(now - datetime.timedelta(minutes=5))
         .not_valid_after(now + datetime.timedelta(days=1))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        b = b.add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
    if usage:
        b = b.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if sans:
        b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return b.sign(signing_key, hashes.SHA256())


def save(folder, stem, cert, key):
    (folder / f"{stem}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    if key is not None:
        (folder / f"{stem}.key").write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))


def main(folder):
    folder = Path(folder)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = build(name("Covenant client-test CA"), name("Covenant client-test CA"),
               ca_key.public_key(), ca_key, ca=True)
    save(folder, "ca", ca, None)
    server_key = ec.generate_private_key(ec.SECP256R1())
    sans = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    server = build(name("localhost"), ca.subject, server_key.public_key(), ca_key,
                   usage=ExtendedKeyUsageOID.SERVER_AUTH, sans=sans)
    save(folder, "server", server, server_key)
    client_key = ec.generate_private_key(ec.SECP256R1())
    client = build(name("svc-orders"), ca.subject, client_key.public_key(), ca_key,
                   usage=ExtendedKeyUsageOID.CLIENT_AUTH)
    save(folder, "client", client, client_key)


if __name__ == "__main__":
    main(sys.argv[1])
