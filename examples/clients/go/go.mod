module faultline.example/client

go 1.19
